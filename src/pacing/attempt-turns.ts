import type { Logger } from 'pino';
import { sqlOf } from '../db/sql.ts';
import type { SharedPacer } from './pacer.ts';
import type { PacedStore } from './rates.ts';
import { newMessageId } from '../queue/queue.ts';
import type { AttemptKindDefinition, AttemptRow, AttemptRuntime } from '../attempts/kind.ts';
import { replaceQueueMessages } from '../attempts/repository.ts';

/**
 * A turn this near is waited for inside the worker (the row is taken, then the call waits); a
 * later one postpones the row's queue message to it, freeing the worker for other stores' work.
 */
export const MAX_TURN_WAIT_MS = 1_000;

/** When an attempt may run: the latest of its targets' turns (by the database's clock), and how long until then. */
export interface AttemptTurn {
  at: Date | null;
  waitMs: number;
}

/**
 * The turn of each attempt, in one reservation for the whole batch (src/pacing/pacer.ts). An
 * attempt whose message was postponed to a turn (`heldAt`) spends that one while it stands.
 */
export async function attemptTurns(pacer: SharedPacer, attempts: { targets: PacedStore[]; heldAt: Date | null }[]): Promise<AttemptTurn[]> {
  const calls = attempts.flatMap(({ targets, heldAt }, i) => targets.map((store) => ({ i, store, heldAt })));
  const turns = await pacer.turns(calls);
  const result: AttemptTurn[] = attempts.map(() => ({ at: null, waitMs: 0 }));
  calls.forEach(({ i }, k) => {
    const turn = turns[k]!;
    const attempt = result[i]!;
    if (attempt.at === null || turn.at > attempt.at) attempt.at = turn.at;
    attempt.waitMs = Math.max(attempt.waitMs, turn.waitMs);
  });
  return result;
}

/**
 * Hands each row over to a new queue message that starts at its turn, carrying the turn, in one
 * transaction that settles the message that delivered it. Nothing else about the row changes: no attempt is spent, its status stays. A row
 * moved meanwhile (another worker, a manual retry) keeps its own message instead.
 */
export async function postponeToTurns<Q extends object>(
  ctx: AttemptRuntime,
  kind: Pick<AttemptKindDefinition<AttemptRow, string, Q, { row: AttemptRow }>, 'name' | 'table' | 'queue' | 'message'>,
  postponed: { row: AttemptRow; turnAt: Date; log: Logger; messageId: string }[],
): Promise<void> {
  if (postponed.length === 0) return;
  const replacements = postponed.map(({ row, turnAt }) => ({
    id: row.id,
    version: row.version,
    messageId: row.queueMessageId ?? null,
    nextMessageId: newMessageId(),
    startsAt: turnAt,
  }));
  const replaced = await sqlOf(ctx.orm)
    .transaction()
    .execute(async (trx) => {
      const written = await replaceQueueMessages(trx, kind.table, replacements);
      const messages = postponed.flatMap(({ row, turnAt }, i) =>
        written[i]
          ? [{ id: replacements[i]!.nextMessageId, message: { ...kind.message(row.id), turnAt: turnAt.toISOString() } as Q, startAfter: turnAt }]
          : [],
      );
      await ctx.queue.insertIn(trx, kind.queue, messages);
      // The messages that delivered them are done with, postponed or stale.
      await ctx.queue.settleIn(trx, kind.queue, postponed.map(({ messageId }) => messageId));
      return written;
    });
  postponed.forEach(({ turnAt, log }, i) => {
    if (!replaced[i]) return log.debug('moved by another worker first; not postponed');
    // Fetched at its turn, not at the next idle poll: a turn fetched over a second late is void.
    ctx.queue.wakeAt(kind.queue, turnAt);
    ctx.metrics.attemptsPostponed.inc({ kind: kind.name });
    log.debug({ turn_at: turnAt.toISOString() }, 'postponed to its store\'s turn');
  });
}
