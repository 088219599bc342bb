import { pino, type Logger } from 'pino';

/**
 * Paths that could carry a secret in anything we log (request bodies are never logged, but
 * errors and objects may carry them). Censored rather than dropped, so their absence is visible.
 */
const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-platform-hmac-sha256"]',
  'res.headers["set-cookie"]',
  '*.accessToken',
  '*.webhookSecret',
  '*.password',
  '*.raw_key',
  '*.refreshToken',
  '*.accessTokenEncrypted',
  '*.webhookSecretEncrypted',
  '*.headers.authorization',
  '*.headers["x-platform-access-token"]',
];

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino({ level, redact: { paths: REDACT, censor: '[redacted]' }, base: { pid: process.pid } }, destination as never);
}
