import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Fields every log line written while handling one unit of work carries, whichever logger writes
 * it: `request_id` for an HTTP request (set by the request-id middleware), a job's id for queue work.
 * The logger adds them (src/shared/logger.ts), so code deep inside a service needs no child logger
 * to be traceable.
 */
const context = new AsyncLocalStorage<Readonly<Record<string, string>>>();

/** Runs `fn` with `fields` added to every log line it (and everything it awaits) writes. */
export function withLogContext<T>(fields: Record<string, string>, fn: () => T): T {
  return context.run({ ...context.getStore(), ...fields }, fn);
}

export function currentLogContext(): Readonly<Record<string, string>> | undefined {
  return context.getStore();
}
