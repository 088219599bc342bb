import { sql } from 'kysely';
import type { Trx } from './sql.ts';

/**
 * The one helper for locks. Every lock is a transaction-scoped PostgreSQL advisory lock on a named
 * key (`hashtext(key)`), released when the transaction ends, so a crash can never leave one held.
 */

/**
 * Waits for the lock on `key` and holds it for the rest of the transaction: what must happen one
 * at a time for that key (one user's creations against a limit, one order's once-only audit entry,
 * one job's fulfillments).
 */
export async function holdLock(trx: Trx, key: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${key}))`.execute(trx);
}

/**
 * Takes the turn named `name` for the rest of the transaction, unless another process holds it
 * (the lock tried, not waited for): periodic work that one process at a time should do.
 */
export async function takeTurn(trx: Trx, name: string): Promise<boolean> {
  const { rows } = await sql<{ taken: boolean }>`select pg_try_advisory_xact_lock(hashtext(${name})) as taken`.execute(trx);
  return rows[0]?.taken === true;
}
