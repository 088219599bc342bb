import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The only form an HMAC-SHA256 signature is accepted in: the canonical base64 of its 32 bytes,
 * i.e. 43 characters of the standard alphabet (the last with its two unused bits zero) and one `=`.
 * Node's base64 decoder is lenient (it skips `!`, spaces and newlines, reads base64url, ignores
 * missing padding and stray bits), so without this check many strings decoded to a valid signature.
 */
const CANONICAL_SIGNATURE = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

/** Base64 HMAC-SHA256 of the raw body bytes, as platforms put in X-Platform-Hmac-SHA256. */
export function signPayload(rawBody: Buffer | string, secret: string): string {
  return createHmac('sha256', secret).update(rawBody).digest('base64');
}

/**
 * Verifies a webhook signature over the exact bytes received (never re-serialised JSON) in
 * constant time, so the comparison leaks nothing about how much of a forged signature matched.
 */
export function verifySignature(rawBody: Buffer, secret: string, signature: string): boolean {
  if (!CANONICAL_SIGNATURE.test(signature)) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  return timingSafeEqual(Buffer.from(signature, 'base64'), expected);
}
