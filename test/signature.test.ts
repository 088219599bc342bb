import { describe, expect, it } from 'vitest';
import { signPayload, verifySignature } from '../src/webhooks/signature.ts';

const SECRET = 'whsec_signature_test';

/** A body whose signature has both `+` and `/`, so its base64url form differs from it. */
function bodyWithUrlUnsafeSignature(): Buffer {
  for (let i = 0; ; i++) {
    const body = Buffer.from(JSON.stringify({ id: i }));
    const signature = signPayload(body, SECRET);
    if (signature.includes('+') && signature.includes('/')) return body;
  }
}

const body = bodyWithUrlUnsafeSignature();
const signature = signPayload(body, SECRET);

describe('verifySignature', () => {
  it('verifies the canonical base64 of the HMAC', () => {
    expect(signature).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(verifySignature(body, SECRET, signature)).toBe(true);
  });

  /** Base64 of the same 32 bytes with the last character's two unused bits set. */
  function withPaddingBitsSet(canonical: string): string {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const last = alphabet.indexOf(canonical[42]!);
    return `${canonical.slice(0, 42)}${alphabet[last | 0b11]}=`;
  }

  it.each([
    ['with "!!!" appended', `${signature}!!!`],
    ['with a space inside', `${signature.slice(0, 10)} ${signature.slice(10)}`],
    ['with a trailing newline', `${signature}\n`],
    ['in base64url form', signature.replaceAll('+', '-').replaceAll('/', '_')],
    ['in base64url form without padding', signature.replaceAll('+', '-').replaceAll('/', '_').replace(/=$/, '')],
    ['without its padding', signature.replace(/=$/, '')],
    ['with extra padding', `${signature}=`],
    ['with the unused bits of its last character set', withPaddingBitsSet(signature)],
    ['in hex', Buffer.from(signature, 'base64').toString('hex')],
    ['of 33 bytes', Buffer.concat([Buffer.from(signature, 'base64'), Buffer.from([0])]).toString('base64')],
    ['of 31 bytes', Buffer.from(signature, 'base64').subarray(0, 31).toString('base64')],
    ['empty', ''],
  ])('refuses the right signature %s', (_label, variant) => {
    expect(variant).not.toBe(signature);
    // Lenient decoding reads most of these as the very same 32 bytes.
    expect(verifySignature(body, SECRET, variant)).toBe(false);
  });

  it('refuses a signature made with another secret or over other bytes', () => {
    expect(verifySignature(body, SECRET, signPayload(body, `${SECRET}x`))).toBe(false);
    expect(verifySignature(Buffer.concat([body, Buffer.from(' ')]), SECRET, signature)).toBe(false);
  });
});
