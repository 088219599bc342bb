import { sql } from 'kysely';
import type { Trx } from './sql.ts';

/**
 * The one helper for locks. Every lock is a transaction-scoped PostgreSQL advisory lock on a named
 * key (`hashtext(key)`), released when the transaction ends, so a crash can never leave one held.
 * Work longer than a transaction holds its row by a lease instead (`holdLease`, at the end).
 */

/**
 * Waits for the lock on `key` and holds it for the rest of the transaction: what must happen one
 * at a time for that key (one user's creations against a limit, one order's once-only audit entry,
 * one job's fulfillments).
 */
export async function holdLock(trx: Trx, key: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${key}))`.execute(trx);
}

/** `holdLock` for several keys, taken in one order whoever asks, so two holders never wait on each other. */
export async function holdLocks(trx: Trx, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  await sql`select pg_advisory_xact_lock(hashtext(k)) from (select distinct unnest(${keys}::text[]) as k order by k) as keys`.execute(trx);
}

/**
 * Takes the turn named `name` for the rest of the transaction, unless another process holds it
 * (the lock tried, not waited for): periodic work that one process at a time should do.
 */
export async function takeTurn(trx: Trx, name: string): Promise<boolean> {
  const { rows } = await sql<{ taken: boolean }>`select pg_try_advisory_xact_lock(hashtext(${name})) as taken`.execute(trx);
  return rows[0]?.taken === true;
}

/** Thrown by `Lease.check` once another process took the work over (its lease was lost). */
export class LeaseLost extends Error {}

/**
 * A hold on a row of long-running work (a divergence-watch pass) by its lease column, as opposed to
 * the transaction-scoped locks above: the row belongs to this process while `renew` keeps moving its
 * lease forward; a process that dies stops renewing, and the row is taken over once it expires.
 */
export interface Lease {
  lost: boolean;
  /** Throws LeaseLost once the lease was lost: the work must stop. */
  check(): void;
  release(): void;
}

/**
 * Renews a lease in the background, every third of `leaseMs`, until released; a renewal that finds
 * the work no longer this process's marks the lease lost. `renew` is the row's own statement
 * (its repository's), which says whether this process still held it.
 */
export function holdLease(renew: () => Promise<boolean>, leaseMs: number, onError: (error: unknown) => void): Lease {
  const lease: Lease = {
    lost: false,
    check() {
      if (lease.lost) throw new LeaseLost();
    },
    release: () => clearInterval(timer),
  };
  const timer = setInterval(() => {
    renew().then((held) => (lease.lost ||= !held), onError);
  }, leaseMs / 3);
  timer.unref();
  return lease;
}
