import { pino, type Logger } from 'pino';
import { currentLogContext } from './log-context.ts';

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
  '*.secret',
  '*.secretEncrypted',
  '*.previousSecretEncrypted',
  '*.headers.authorization',
  '*.headers["x-platform-access-token"]',
];

/**
 * The unit of work's fields (request_id, job_id, ...) on every line, unless the line's logger is
 * already bound to them (pino-http's request logger, a worker's child logger): JSON keeps one of each.
 */
function mixin(_line: object, _level: number, logger: Logger): object {
  const context = currentLogContext();
  if (context === undefined) return {};
  const bound = logger.bindings();
  const fields: Record<string, string> = {};
  for (const [key, value] of Object.entries(context)) if (!(key in bound)) fields[key] = value;
  return fields;
}

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino({ level, mixin, redact: { paths: REDACT, censor: '[redacted]' }, base: { pid: process.pid } }, destination as never);
}
