import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/postgresql';
import type { AppError } from '../shared/errors.ts';

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  '08000',
  '08003',
  '08006',
  '08001',
  '08004',
]);

const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection terminated unexpectedly',
  'the database system is shutting down',
  'the database system is starting up',
  // A pooled connection that closed under a transaction still in use (see pool.ts).
  'Client was closed and is not queryable',
];

/** True when an error means "the database cannot be reached right now" rather than a bug. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    const { code, message } = current as { code?: string; message?: string };
    if (code && UNAVAILABLE_CODES.has(code)) return true;
    if (message && UNAVAILABLE_MESSAGES.some((text) => message.includes(text))) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Flushes the unit of work; a unique index refusing a row becomes `conflict` (a 409 naming what is
 * taken), any other failure is rethrown. The index, not a look-up before the insert, decides, so two
 * concurrent creations cannot both pass.
 */
export async function flushUnique(em: EntityManager, conflict: () => AppError): Promise<void> {
  try {
    await em.flush();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw conflict();
    throw error;
  }
}
