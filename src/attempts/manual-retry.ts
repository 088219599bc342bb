import type { AttemptEvent } from '../../machines/attempt.machine.ts';
import type { AuditRecord } from '../audit-log/repository.ts';
import type { Trx } from '../db/sql.ts';
import type { Metrics } from '../metrics/index.ts';
import { newMessageId, type Queue, type QueueSpec } from '../queue/queue.ts';
import { AppError, notFound } from '../shared/errors.ts';
import type { AttemptRow } from './kind.ts';
import type { AttemptWrite } from './repository.ts';

/** How often a retry by hand reads its row again when a worker moved it meanwhile. */
const RETRY_ROUNDS = 3;

/** What of a kind a retry by hand uses (src/attempts/kind.ts `defineAttemptKind`). */
export interface RetriedKind<R extends AttemptRow, M extends object> {
  name: string;
  queue: QueueSpec<M>;
  message(rowId: string): M;
  transition(row: R, event: AttemptEvent<string>, at: Date): boolean;
  resultOf(row: R): string | null;
}

/** One row's retry by hand, as its feature reads and writes it; `P`: what `prepare` reads for `written`. */
export interface ManualRetry<R extends AttemptRow, T, P = undefined> {
  /** The user's row, or null: another user's is as missing (404). */
  find(): Promise<R | null>;
  /** The retried row's audit entry (its `….retried` action). */
  audit(row: R): AuditRecord;
  /** The feature's repository: its transactions and the kind's version-checked transition writes. */
  repository: {
    transaction<X>(work: (trx: Trx) => Promise<X>): Promise<X>;
    writeTransitions(trx: Trx, writes: AttemptWrite<R>[]): Promise<boolean[]>;
  };
  /**
   * What `written` needs that is read on connections of its own (another feature's port): read before
   * the transaction, so a retry holds one connection at a time (concurrent retries would otherwise
   * exhaust the pool, each holding a transaction while waiting for a second connection).
   */
  prepare?(row: R): Promise<P>;
  /** What else the retry writes in its transaction once the row moved (its event), and what it answers. */
  written(trx: Trx, row: R, prepared: P): Promise<T>;
  /** How the answers name the row: `{ many: 'sync jobs', one: 'job' }`. */
  names: { many: string; one: string };
}

/**
 * A failed or dead row of retried work back to pending (the machine's RETRY: three automatic retries
 * again, `attempts` keeps counting) with a fresh queue message, which makes any older message stale,
 * its audit entry and what `retry.written` adds, in one transaction. Any other status is 400
 * `sync_job_not_retryable`, so of concurrent retries one wins; a row a worker moved between the read
 * and the version-checked write is read again, at most RETRY_ROUNDS times (then 503 `unavailable`).
 */
export async function retryByHand<R extends AttemptRow, M extends object, T, P = undefined>(
  deps: { queue: Queue; metrics: Metrics },
  kind: RetriedKind<R, M>,
  retry: ManualRetry<R, T, P>,
): Promise<T> {
  for (let round = 1; ; round++) {
    const row = await retry.find();
    if (!row) throw notFound();
    const now = new Date();
    if (!kind.transition(row, { type: 'RETRY', at: now.toISOString() }, now)) {
      throw new AppError('sync_job_not_retryable', {
        message: `Only failed or dead ${retry.names.many} can be retried; this one is ${row.status}.`,
        details: { status: row.status },
      });
    }
    row.queueMessageId = newMessageId();
    const audit = retry.audit(row);
    const prepared = (await retry.prepare?.(row)) as P;
    const moved = await retry.repository.transaction(async (trx) => {
      const [written] = await retry.repository.writeTransitions(trx, [{ row, result: kind.resultOf(row), audit }]);
      if (!written) return null;
      await deps.queue.insertIn(trx, kind.queue, [{ id: row.queueMessageId!, message: kind.message(row.id) }]);
      return { answer: await retry.written(trx, row, prepared) };
    });
    if (moved) {
      deps.metrics.attemptTransitions.inc({ kind: kind.name, status: 'pending' });
      return moved.answer;
    }
    if (round === RETRY_ROUNDS) {
      throw new AppError('unavailable', { message: `The ${retry.names.one} kept changing while it was being retried; try again.`, retryAfterSeconds: 1 });
    }
  }
}
