import { sql, type RawBuilder } from 'kysely';
import type { Db, Trx } from './sql.ts';

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

/** The query taking the locks on `keys` (a text[] value), each once and in key order: every multi-key lock runs it. */
export function takeLocks(keys: unknown): RawBuilder<unknown> {
  return sql`select pg_advisory_xact_lock(hashtext(k)) from (select distinct unnest(${keys}::text[]) as k order by k) as keys`;
}

/**
 * `holdLock` for several keys, taken in one order whoever asks, so two holders never wait on each
 * other. `statementEnd` ends the statement's text (the PREPARED mark of a hot path).
 */
export async function holdLocks(trx: Trx, keys: string[], statementEnd: RawBuilder<unknown> = sql``): Promise<void> {
  if (keys.length === 0) return;
  await sql`${takeLocks(keys)}${statementEnd}`.execute(trx);
}

/**
 * `holdLocks` as a step of another statement: the locks on `keys` (a text[] value; none when empty)
 * are taken once that statement's relation `after` is complete (the rows it writes, say), so they come
 * after those writes as they would in a statement of their own, saving the round trip. A step whose
 * output nothing reads is not run: the statement must read it, e.g. `where (select locks from step) >= 0`,
 * which PostgreSQL evaluates once, before its first row, even when the statement returns none.
 */
export function locksAfterStep(keys: unknown, after: string): RawBuilder<{ locks: number }> {
  return sql`(
    select count(*) as locks from (${takeLocks(keys)} where (select count(*) from ${sql.table(after)}) >= 0) as taken)`;
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
 * Thrown by `Lease.check` once this process is stopping (SIGTERM): the work stops where it is and is
 * handed back (`handBackRun`) with what it did so far, for another process to go on with at once.
 */
export class RunStopped extends Error {}

/**
 * A hold on a row of long-running work (a reconciliation run, a divergence-watch pass) by its lease column, as opposed to
 * the transaction-scoped locks above: the row belongs to this process while `renew` keeps moving its
 * lease forward; a process that dies stops renewing, and the row is taken over once it expires. A
 * process that stops gracefully hands it back instead (`stopping`).
 */
export interface Lease {
  lost: boolean;
  /** Aborted once this process is stopping: waits (a 429's pause) end early. */
  readonly stopping: AbortSignal;
  /** Throws LeaseLost once the lease was lost, RunStopped once the process is stopping: the work must stop. */
  check(): void;
  /** Throws LeaseLost once the lease was lost (work that is done is finished even while the process stops). */
  checkHeld(): void;
  release(): void;
}

/**
 * Renews a lease in the background, every third of `leaseMs`, until released; a renewal that finds
 * the work no longer this process's marks the lease lost. `renew` is the row's own statement
 * (its repository's), which says whether this process still held it. `stopping` is the process's
 * shutdown (src/workers/index.ts), which makes `check` throw RunStopped.
 */
export function holdLease(renew: () => Promise<boolean>, leaseMs: number, onError: (error: unknown) => void, stopping: AbortSignal = new AbortController().signal): Lease {
  const lease: Lease = {
    lost: false,
    stopping,
    check() {
      lease.checkHeld();
      if (stopping.aborted) throw new RunStopped();
    },
    checkHeld() {
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

/**
 * The statements of a table of leased runs (long work over one store, one process at a time:
 * reconciliation runs, divergence-watch passes). Such a table has `id`, `reseller_store_id`, `status`
 * (`running` until finished), `takes` (how many times a process took the run: a hold's identity),
 * `lease_expires_at`, `handed_back` (given back by a stopping process), `finished_at` and `error`. Leases run on the database's clock, which every
 * process shares. `table` is the feature's own table name, never input.
 */
export interface RunHold {
  id: string;
  /** The `takes` count this hold took the run at: only this hold may renew or finish it. */
  take: number;
}

/** `now() + ms` by the database's clock: a lease's end. */
export const leaseEnd = (ms: number) => sql<Date>`now() + ${ms} * interval '1 millisecond'`;

/**
 * Takes a run for this process: one nobody took yet, one a stopping process handed back
 * (`handBackRun`), or one whose process was lost (its lease expired). Returns the row's `columns`
 * and its `takes` (the hold's `take`), or null when the run finished or another process holds it (a
 * duplicate queue message).
 */
export async function takeRun<R extends object>(db: Db, table: string, id: string, leaseMs: number, columns: (keyof R & string)[]): Promise<(R & { takes: number }) | null> {
  const { rows } = await sql<R & { takes: number }>`
    update ${sql.table(table)} set takes = takes + 1, handed_back = false, lease_expires_at = ${leaseEnd(leaseMs)}
    where id = ${id} and status = 'running' and (takes = 0 or handed_back or lease_expires_at < now())
    returning ${sql.join(columns.map((column) => sql.ref(column)))}, takes`.execute(db);
  return rows[0] ?? null;
}

/**
 * Gives a run this hold has back, still `running`, for the next process to take at once (`takeRun`):
 * what a process that stops gracefully does with its runs. The hold ends (`takes` moves on, so it can
 * no longer renew or finish the run), and the run waits for a worker as a requested one does: a
 * lease of `queuedLeaseMs`, after which nobody took it and it is failed as abandoned. The caller
 * inserts the run's queue message in the same transaction. False when the run was no longer the hold's.
 */
export async function handBackRun(trx: Trx, table: string, hold: RunHold, queuedLeaseMs: number): Promise<boolean> {
  const result = await sql`
    update ${sql.table(table)} set takes = takes + 1, handed_back = true, lease_expires_at = ${leaseEnd(queuedLeaseMs)}
    where id = ${hold.id} and status = 'running' and takes = ${hold.take}`.execute(trx);
  return result.numAffectedRows === 1n;
}

/** Extends a hold of a run; false when the run is no longer the hold's (finished, or taken over). */
export async function renewRun(db: Db, table: string, hold: RunHold, leaseMs: number): Promise<boolean> {
  const result = await sql`
    update ${sql.table(table)} set lease_expires_at = ${leaseEnd(leaseMs)}
    where id = ${hold.id} and status = 'running' and takes = ${hold.take}`.execute(db);
  return result.numAffectedRows === 1n;
}

const ABANDONED = 'Abandoned: the process running it stopped before it finished.';

/** Fails the running runs whose lease expired (their process was lost), of one store or all, so they block no new run; returns how many. */
export async function abandonExpiredRuns(trx: Trx, table: string, resellerStoreId: string | null): Promise<number> {
  const ofStore = resellerStoreId === null ? sql`` : sql` and reseller_store_id = ${resellerStoreId}`;
  const result = await sql`
    update ${sql.table(table)} set status = 'failed', finished_at = now(), error = ${ABANDONED}
    where status = 'running' and lease_expires_at < now()${ofStore}`.execute(trx);
  return Number(result.numAffectedRows ?? 0n);
}
