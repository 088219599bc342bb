import type { Logger } from 'pino';
import type { Config } from '../config/index.ts';

/** What the scheduler reads: its intervals, and where it logs. */
interface SchedulerDeps {
  config: Pick<Config, 'reconcileIntervalMs' | 'sweepIntervalMs'>;
  logger: Logger;
}
import { every } from '../shared/periodic.ts';
import type { ReconciliationService } from './service.ts';

/**
 * Every worker process looks for stores due a reconciliation a few times per interval (at most every
 * 10 s); the database decides which process starts their runs (see `startDue`), so adding processes
 * adds no runs. pg-boss's own `schedule()` has minute granularity, too coarse for an interval in ms.
 * Returns a function that stops the turns and waits for one in progress.
 */
export function startReconciliationScheduler(ctx: SchedulerDeps, reconciliations: ReconciliationService): () => Promise<void> {
  const intervalMs = ctx.config.reconcileIntervalMs;
  if (intervalMs === 0) return startAbandonedRunSweep(ctx, reconciliations);
  const turnMs = Math.min(10_000, Math.max(250, Math.floor(intervalMs / 2)));
  return every(turnMs, () =>
    reconciliations
      .scheduleDue()
      .then((started) => {
        if (started > 0) ctx.logger.info({ runs: started }, 'reconciliations scheduled');
      })
      .catch((error: unknown) => ctx.logger.warn({ err: error }, 'scheduling reconciliations failed; trying again next turn')),
  );
}

/**
 * Without a schedule nothing else would end a run whose process was killed (only the store's next
 * POST …/reconcile did): at the sweep's interval, runs whose lease expired are failed as abandoned.
 * (With a schedule, every scheduling turn does this first.)
 */
function startAbandonedRunSweep(ctx: SchedulerDeps, reconciliations: ReconciliationService): () => Promise<void> {
  return every(ctx.config.sweepIntervalMs, () =>
    reconciliations
      .abandonExpired()
      .then((abandoned) => {
        if (abandoned > 0) ctx.logger.warn({ runs: abandoned }, 'abandoned reconciliations failed');
      })
      .catch((error: unknown) => ctx.logger.warn({ err: error }, 'failing abandoned reconciliations failed; trying again next turn')),
  );
}
