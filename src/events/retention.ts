import type { AppContext } from '../context.ts';
import { sqlOf } from '../db/sql.ts';
import { every } from '../shared/periodic.ts';
import { takeTurn } from '../db/locks.ts';
import { pruneEventsBefore } from './repository.ts';

/** Events deleted per statement, and statements per pass: a pass stays short; the next takes the rest. */
const EVENTS_PER_BATCH = 1_000;
const BATCHES_PER_PASS = 50;
/** How often a worker process prunes (processes take turns). */
export const PRUNE_INTERVAL_MS = 60 * 60_000;
const FIRST_PRUNE_AFTER_MS = 60_000;

/**
 * Deletes events (and their deliveries) older than EVENT_RETENTION_DAYS, so the table holds what
 * GET /v1/events promises (events.md: at least 30 days) and does not grow for ever. Returns how
 * many went; null when another process had the turn.
 */
export async function pruneEvents(ctx: AppContext, now = new Date()): Promise<number | null> {
  const before = new Date(now.getTime() - ctx.config.eventRetentionDays * 86_400_000);
  let pruned = 0;
  for (let batch = 0; batch < BATCHES_PER_PASS; batch++) {
    const deleted = await sqlOf(ctx.orm)
      .transaction()
      .execute(async (trx) => ((await takeTurn(trx, 'events.prune')) ? pruneEventsBefore(trx, before, EVENTS_PER_BATCH) : null));
    if (deleted === null) return batch === 0 ? null : pruned;
    pruned += deleted;
    if (deleted < EVENTS_PER_BATCH) break;
  }
  return pruned;
}

/** Prunes every PRUNE_INTERVAL_MS in this (worker) process; returns what stops it and waits for a pass in progress. */
export function startEventPruner(ctx: AppContext): () => Promise<void> {
  return every(PRUNE_INTERVAL_MS, () =>
    pruneEvents(ctx)
      .then((pruned) => {
        if (pruned) ctx.logger.info({ events_pruned: pruned, retention_days: ctx.config.eventRetentionDays }, 'old events pruned');
      })
      .catch((error: unknown) => ctx.logger.warn({ err: error }, 'event pruning failed; trying again next interval')),
    // Soon after start (processes restarted more often than hourly prune too), spread across processes.
    FIRST_PRUNE_AFTER_MS + Math.floor(Math.random() * FIRST_PRUNE_AFTER_MS),
  );
}
