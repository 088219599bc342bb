import { createCipheriv, createDecipheriv, createHash, createHmac, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';

const VERSION = 'v1';

/**
 * AES-256-GCM for store credentials at rest: `v1.<iv>.<tag>.<ciphertext>` (base64url parts).
 * The record id is bound in as associated data, so a ciphertext copied onto another row fails.
 */
export class SecretBox {
  /** A key object made once: a raw key would be imported again for every call. */
  private readonly key: KeyObject;
  /** The key of `fingerprint`, derived from the encryption key (never the encryption key itself). */
  private readonly fingerprintKey: KeyObject;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('encryption key must be 32 bytes');
    this.key = createSecretKey(key);
    this.fingerprintKey = createSecretKey(Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'store-credential-fingerprint', 32)));
  }

  /**
   * A keyed digest (HMAC-SHA256, hex: 64 characters) naming a secret without revealing it: equal
   * secrets give equal fingerprints, and one stored in the database cannot be tried against guesses
   * without the key (store tokens may be weak, unlike the service's own API keys).
   */
  fingerprint(value: string): string {
    return createHmac('sha256', this.fingerprintKey).update(value).digest('hex');
  }

  encrypt(plaintext: string, boundTo: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(boundTo));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), ciphertext].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
  }

  decrypt(sealed: string, boundTo: string): string {
    const [version, iv, tag, ciphertext] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw new Error('unreadable secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(boundTo));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** SHA-256 hex, for high-entropy tokens (API keys, refresh tokens) that are looked up by hash. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}
