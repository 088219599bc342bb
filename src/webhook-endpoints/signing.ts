import { createHmac, randomBytes } from 'node:crypto';
import type { SecretBox } from '../shared/secrets.ts';

/** Standard Webhooks secrets: `whsec_` and the base64 of the key's bytes. */
const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 24;

export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/**
 * `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, keyed with the secret's bytes (the base64
 * after `whsec_`), as Standard Webhooks 1.0 says; several secrets give space-separated signatures,
 * any one of which a receiver accepts (a secret rotation).
 */
export function signatureHeader(secrets: string[], webhookId: string, timestampSeconds: number, body: string): string {
  const content = `${webhookId}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => `v1,${createHmac('sha256', Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')).update(content).digest('base64')}`)
    .join(' ');
}

/** The previous secret is sealed under its own binding, so the two columns cannot be swapped. */
export const previousSecretBinding = (endpointId: string) => `${endpointId}:previous`;

export interface SealedSecrets {
  id: string;
  secretEncrypted: string;
  previousSecretEncrypted: string | null;
  previousSecretExpiresAt: Date | null;
}

/** The secrets a delivery made at `now` is signed with: the current one, and during a rotation's overlap the previous one. */
export function signingSecrets(box: SecretBox, endpoint: SealedSecrets, now: Date): string[] {
  const secrets = [box.decrypt(endpoint.secretEncrypted, endpoint.id)];
  if (endpoint.previousSecretEncrypted && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now) {
    secrets.push(box.decrypt(endpoint.previousSecretEncrypted, previousSecretBinding(endpoint.id)));
  }
  return secrets;
}
