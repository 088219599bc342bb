import type { AppContext } from '../context.ts';
import { every } from '../shared/periodic.ts';
import type { ReconciliationService } from './service.ts';

/**
 * Every worker process looks for stores due a reconciliation a few times per interval (at most every
 * 10 s); the database decides which process starts their runs (see `startDue`), so adding processes
 * adds no runs. pg-boss's own `schedule()` has minute granularity, too coarse for an interval in ms.
 * Returns a function that stops the turns and waits for one in progress.
 */
export function startReconciliationScheduler(ctx: AppContext, reconciliations: ReconciliationService): () => Promise<void> {
  const intervalMs = ctx.config.reconcileIntervalMs;
  if (intervalMs === 0) return async () => {};
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
