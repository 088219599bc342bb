import { createHmac, timingSafeEqual } from 'node:crypto';

/** Base64 HMAC-SHA256 of the raw body bytes, as platforms put in X-Platform-Hmac-SHA256. */
export function signPayload(rawBody: Buffer | string, secret: string): string {
  return createHmac('sha256', secret).update(rawBody).digest('base64');
}

/**
 * Verifies a webhook signature over the exact bytes received (never re-serialised JSON) in
 * constant time, so the comparison leaks nothing about how much of a forged signature matched.
 */
export function verifySignature(rawBody: Buffer, secret: string, signature: string): boolean {
  const expected = Buffer.from(signPayload(rawBody, secret), 'base64');
  const given = Buffer.from(signature, 'base64');
  if (given.length !== expected.length) return false;
  return timingSafeEqual(given, expected);
}
