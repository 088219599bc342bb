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

/**
 * When an attempt may run: the latest of its targets' turns (by the database's clock), and how long
 * until then. `estimate`: one of its calls was beyond the booking horizon, so it booked nothing
 * (turns its other calls booked were given back): its estimated turn, and when its message comes
 * back to book one (half the horizon before the estimate, so the store always has booked work ahead).
 */
export interface AttemptTurn {
  at: Date | null;
  waitMs: number;
  estimate: { at: Date; comeBackAt: Date } | null;
}

/** What an attempt reserves: its calls' stores, the turn its message held or the estimate it carries, and its lane. */
export interface AttemptTurnRequest {
  targets: PacedStore[];
  heldAt: Date | null;
  /** The message came back with its estimate (see AttemptTurn): it books now, whatever the horizon. */
  estimatedAt?: Date | null;
  /** An urgent attempt (a cancellation's) books the store's next turn, never deferred. */
  urgent?: boolean;
}

/**
 * The turn of each attempt, in one reservation for the whole batch (src/pacing/pacer.ts). An
 * attempt whose message was postponed to a turn (`heldAt`) spends that one while it stands; an
 * ordinary one books at most the booking horizon ahead, or gets an estimate instead. The turns an
 * estimated attempt's other calls booked are given back (a statement per store, only then).
 */
export async function attemptTurns(pacer: SharedPacer, attempts: AttemptTurnRequest[], logger?: Logger): Promise<AttemptTurn[]> {
  const calls = attempts.flatMap(({ targets, heldAt, estimatedAt, urgent }, i) =>
    targets.map((store) => ({ i, store, heldAt, lane: urgent || estimatedAt ? ('now' as const) : ('ordinary' as const) })),
  );
  const turns = await pacer.turns(calls);
  const result: AttemptTurn[] = attempts.map(() => ({ at: null, waitMs: 0, estimate: null }));
  calls.forEach(({ i, store }, k) => {
    const turn = turns[k]!;
    const attempt = result[i]!;
    if (turn.estimated) {
      const comeBackAt = new Date(turn.at.getTime() - pacer.horizonMs(store) / 2);
      if (attempt.estimate === null || turn.at > attempt.estimate.at) attempt.estimate = { at: turn.at, comeBackAt };
      return;
    }
    if (attempt.at === null || turn.at > attempt.at) attempt.at = turn.at;
    attempt.waitMs = Math.max(attempt.waitMs, turn.waitMs);
  });
  // An attempt goes with all its calls or none: what a deferred attempt's other calls booked goes back.
  const unused = calls.flatMap(({ i, store }, k) => (result[i]!.estimate !== null && turns[k]!.booked ? [store] : []));
  await perStore(unused, (store, count) => pacer.release(store, count), logger, 'could not give back the turns of a deferred attempt');
  for (const attempt of result) {
    if (attempt.estimate === null) continue;
    attempt.at = attempt.estimate.at;
    attempt.waitMs = Math.max(0, attempt.estimate.at.getTime() - Date.now());
  }
  return result;
}

/**
 * Attempts whose messages waited in their stores' lines with an estimate and came back stale (the
 * row retried by hand, cancelled or finished meanwhile): nobody takes their places, so they are
 * given back (`SharedPacer.leaveLine`). Only for an attempt whose calls all go to one store: an
 * estimate does not say which of several stores' lines the attempt waited in (the others' turns
 * were booked, then given back), and giving back a place it never held would let new work pass a
 * member still waiting.
 */
export async function leaveLines(pacer: SharedPacer, attempts: PacedStore[][], logger?: Logger): Promise<void> {
  const oneStore = attempts.filter((targets) => targets.every((target) => target.storeId === targets[0]!.storeId));
  await perStore(oneStore.flat(), (store, count) => pacer.leaveLine(store, count), logger, 'could not give back the line places of stale messages');
}

/** `give` once per store of `calls`, with how many of them are its; a store whose statement fails is logged, not thrown. */
async function perStore(calls: PacedStore[], give: (store: PacedStore, count: number) => Promise<void>, logger: Logger | undefined, failure: string): Promise<void> {
  const byStore = new Map<string, { store: PacedStore; count: number }>();
  for (const store of calls) {
    const entry = byStore.get(store.storeId) ?? { store, count: 0 };
    entry.count += 1;
    byStore.set(store.storeId, entry);
  }
  await Promise.all([...byStore.values()].map(({ store, count }) => give(store, count).catch((error: unknown) => logger?.warn({ err: error, store_id: store.storeId }, failure))));
}

/** A row whose attempt is not run now: to its turn (`turnAt`), or, beyond the horizon, to book one near its estimate. */
export interface Postponement {
  row: AttemptRow;
  log: Logger;
  messageId: string;
  /** The turn booked for it: its message starts then and carries it (`turnAt`). */
  turnAt?: Date;
  /** Nothing booked: its message starts at `estimate.comeBackAt` and carries the estimate (`estimatedAt`). */
  estimate?: { at: Date; comeBackAt: Date };
}

/**
 * Hands each row over to a new queue message that starts at its turn, carrying the turn (or that
 * starts before its estimated turn, carrying the estimate), in one transaction that settles the
 * message that delivered it. Nothing else about the row changes: no attempt is spent, its status
 * stays. A row moved meanwhile (another worker, a manual retry) keeps its own message instead.
 */
export async function postponeToTurns<Q extends object>(
  ctx: AttemptRuntime,
  kind: Pick<AttemptKindDefinition<AttemptRow, string, Q, { row: AttemptRow }>, 'name' | 'table' | 'queue' | 'message'>,
  postponed: Postponement[],
): Promise<void> {
  if (postponed.length === 0) return;
  const startOf = ({ turnAt, estimate }: Postponement): Date => {
    if (turnAt) return turnAt;
    const now = Date.now();
    return new Date(Math.max(now, estimate!.comeBackAt.getTime()));
  };
  const starts = postponed.map(startOf);
  const replacements = postponed.map(({ row, turnAt, estimate }) => ({
    id: row.id,
    version: row.version,
    messageId: row.queueMessageId ?? null,
    nextMessageId: newMessageId(),
    // A failed row's next retry shows when its call is expected to go.
    startsAt: turnAt ?? estimate!.at,
  }));
  const replaced = await sqlOf(ctx.orm)
    .transaction()
    .execute(async (trx) => {
      const written = await replaceQueueMessages(trx, kind.table, replacements);
      const messages = postponed.flatMap(({ row, turnAt, estimate }, i) =>
        written[i]
          ? [
              {
                id: replacements[i]!.nextMessageId,
                message: { ...kind.message(row.id), ...(turnAt ? { turnAt: turnAt.toISOString() } : { estimatedAt: estimate!.at.toISOString() }) } as Q,
                startAfter: starts[i]!,
              },
            ]
          : [],
      );
      await ctx.queue.insertIn(trx, kind.queue, messages);
      // The messages that delivered them are done with, postponed or stale.
      await ctx.queue.settleIn(trx, kind.queue, postponed.map(({ messageId }) => messageId));
      return written;
    });
  postponed.forEach(({ turnAt, estimate, log }, i) => {
    if (!replaced[i]) return log.debug('moved by another worker first; not postponed');
    // Fetched at its start, not at the next idle poll: a turn fetched over a second late is void.
    ctx.queue.wakeAt(kind.queue, starts[i]!);
    ctx.metrics.attemptsPostponed.inc({ kind: kind.name });
    if (estimate) {
      ctx.metrics.attemptsDeferred.inc({ kind: kind.name });
      log.debug({ estimated_at: estimate.at.toISOString(), comes_back_at: starts[i]!.toISOString() }, 'beyond the booking horizon: waits in its store\'s line');
    } else log.debug({ turn_at: turnAt!.toISOString() }, 'postponed to its store\'s turn');
  });
}
