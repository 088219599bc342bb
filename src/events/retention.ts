import type { Logger } from 'pino';
import { every } from '../shared/periodic.ts';
import type { EventRepository } from './repository.ts';

/** Events deleted per statement, and statements per pass: a pass stays short; the next takes the rest. */
const EVENTS_PER_BATCH = 1_000;
const BATCHES_PER_PASS = 50;
/** How often a worker process prunes (processes take turns). */
export const PRUNE_INTERVAL_MS = 60 * 60_000;
const FIRST_PRUNE_AFTER_MS = 60_000;

/** What pruning works with: the events' repository and EVENT_RETENTION_DAYS. */
export interface EventPruning {
  events: Pick<EventRepository, 'pruneOnTurn'>;
  retentionDays: number;
}

/**
 * Deletes events (and their deliveries) older than EVENT_RETENTION_DAYS, so the table holds what
 * GET /v1/events promises (events.md: at least 30 days) and does not grow for ever. Returns how
 * many went; null when another process had the turn.
 */
export async function pruneEvents(ctx: EventPruning, now = new Date()): Promise<number | null> {
  const before = new Date(now.getTime() - ctx.retentionDays * 86_400_000);
  let pruned = 0;
  for (let batch = 0; batch < BATCHES_PER_PASS; batch++) {
    const deleted = await ctx.events.pruneOnTurn(before, EVENTS_PER_BATCH);
    if (deleted === null) return batch === 0 ? null : pruned;
    pruned += deleted;
    if (deleted < EVENTS_PER_BATCH) break;
  }
  return pruned;
}

/** Prunes every PRUNE_INTERVAL_MS in this (worker) process; returns what stops it and waits for a pass in progress. */
export function startEventPruner(ctx: EventPruning & { logger: Logger }): () => Promise<void> {
  return every(PRUNE_INTERVAL_MS, () =>
    pruneEvents(ctx)
      .then((pruned) => {
        if (pruned) ctx.logger.info({ events_pruned: pruned, retention_days: ctx.retentionDays }, 'old events pruned');
      })
      .catch((error: unknown) => ctx.logger.warn({ err: error }, 'event pruning failed; trying again next interval')),
    // Soon after start (processes restarted more often than hourly prune too), spread across processes.
    FIRST_PRUNE_AFTER_MS + Math.floor(Math.random() * FIRST_PRUNE_AFTER_MS),
  );
}
