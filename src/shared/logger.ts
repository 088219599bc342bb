import { pino, type Logger } from 'pino';
import { currentLogContext } from './log-context.ts';

/** Field names whose values are secrets (request bodies are never logged, but errors and objects may carry them). */
const SECRET_FIELDS = new Set([
  'accessToken',
  'webhookSecret',
  'password',
  'raw_key',
  'refreshToken',
  'accessTokenEncrypted',
  'webhookSecretEncrypted',
  'secret',
  'secretEncrypted',
  'previousSecretEncrypted',
]);
/** Headers whose values are credentials, in an object's `headers` (lower-case, as Node keeps them). */
const SECRET_HEADERS = ['authorization', 'cookie', 'set-cookie', 'x-platform-hmac-sha256', 'x-platform-access-token'];
export const LOG_CENSOR = '[redacted]';

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `value` with its secret fields and credential headers censored: itself when it has none (the usual case, so nothing is copied). */
function censoredField(value: Record<string, unknown>): Record<string, unknown> {
  const headers = isRecord(value.headers) ? value.headers : null;
  const secretHeaders = headers ? SECRET_HEADERS.filter((name) => headers[name] !== undefined) : [];
  const secretFields = Object.keys(value).filter((key) => SECRET_FIELDS.has(key));
  if (secretFields.length === 0 && secretHeaders.length === 0) return value;
  const copy = value instanceof Error ? errorCopy(value) : { ...value };
  for (const key of secretFields) copy[key] = LOG_CENSOR;
  if (secretHeaders.length > 0) copy.headers = { ...headers, ...Object.fromEntries(secretHeaders.map((name) => [name, LOG_CENSOR])) };
  return copy;
}

/**
 * A copy of an error that pino still serializes as one (its type, message and stack), its own
 * properties kept as they were: what was not enumerable (a `cause`) stays out of the line.
 */
function errorCopy(error: Error): Record<string, unknown> {
  const copy = Object.create(Object.getPrototypeOf(error) as object, Object.getOwnPropertyDescriptors(error)) as Record<string, unknown>;
  // V8's `stack` is an accessor that reads the original error's hidden state: kept as its value.
  Object.defineProperty(copy, 'stack', { value: error.stack, writable: true, configurable: true, enumerable: false });
  return copy;
}

/**
 * A line's fields (or a child logger's bindings) with every secret censored, at the top level and
 * one level down (`{ store: { accessToken } }`, `{ req: { headers: { authorization } } }`). Censored
 * rather than dropped, so their absence is visible. Done here rather than with pino's `redact`
 * paths, which parse every path again for every field of every line (about 35 µs of a job's 50 µs
 * of logging, src/attempts/worker.ts's two lines).
 */
export function censored(fields: Record<string, unknown>): Record<string, unknown> {
  let result = fields;
  for (const key in fields) {
    const value = fields[key];
    const safe = SECRET_FIELDS.has(key) ? LOG_CENSOR : isRecord(value) ? censoredField(value) : value;
    if (safe === value) continue;
    if (result === fields) result = { ...fields };
    result[key] = safe;
  }
  return result;
}

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
  const logger = pino({ level, mixin, formatters: { log: censored, bindings: censored }, base: { pid: process.pid } }, destination as never);
  // pino gives a child's bindings no formatter: every child (and its children, which inherit this) censors them here.
  const child = logger.child;
  logger.child = function (this: Logger, bindings, options) {
    return child.call(this, censored(bindings), options);
  } as Logger['child'];
  return logger;
}
