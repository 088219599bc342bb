import type { Logger } from 'pino';
import type { Config } from '../config/index.ts';
import { every } from '../shared/periodic.ts';
import type { DivergenceService } from './service.ts';

/** What the scheduler reads: its intervals, and where it logs. */
interface SchedulerDeps {
  config: Pick<Config, 'divergenceIntervalMs' | 'sweepIntervalMs'>;
  logger: Logger;
}

/**
 * Every worker process looks for stores due a divergence-watch pass a few times per interval (at
 * most every 10 s); one process at a time starts their passes (a transaction-scoped advisory lock),
 * so adding processes adds no passes. Returns a function that stops the turns.
 */
export function startWatchScheduler(ctx: SchedulerDeps, divergences: DivergenceService): () => Promise<void> {
  const intervalMs = ctx.config.divergenceIntervalMs;
  if (intervalMs === 0) return startAbandonedPassSweep(ctx, divergences);
  const turnMs = Math.min(10_000, Math.max(250, Math.floor(intervalMs / 2)));
  return every(turnMs, () =>
    divergences
      .scheduleDue()
      .then((started) => {
        if (started > 0) ctx.logger.info({ passes: started }, 'divergence-watch passes scheduled');
      })
      .catch((error: unknown) => ctx.logger.warn({ err: error }, 'scheduling divergence-watch passes failed; trying again next turn')),
  );
}

/**
 * Without a schedule nothing else would end a pass whose process was killed (only the store's next
 * POST …/divergence_checks did): at the sweep's interval, passes whose lease expired are failed as
 * abandoned, as reconciliation does for its runs. (With a schedule, every scheduling turn does this first.)
 */
function startAbandonedPassSweep(ctx: SchedulerDeps, divergences: DivergenceService): () => Promise<void> {
  return every(ctx.config.sweepIntervalMs, () =>
    divergences
      .abandonExpired()
      .then((abandoned) => {
        if (abandoned > 0) ctx.logger.warn({ passes: abandoned }, 'abandoned divergence-watch passes failed');
      })
      .catch((error: unknown) => ctx.logger.warn({ err: error }, 'failing abandoned divergence-watch passes failed; trying again next turn')),
  );
}
