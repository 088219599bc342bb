import type { Logger } from 'pino';
import type { Config } from '../config/index.ts';
import { every } from '../shared/periodic.ts';
import type { DivergenceService } from './service.ts';

/**
 * Every worker process looks for stores due a divergence-watch pass a few times per interval (at
 * most every 10 s); one process at a time starts their passes (a transaction-scoped advisory lock),
 * so adding processes adds no passes. Returns a function that stops the turns.
 */
export function startWatchScheduler(ctx: { config: Pick<Config, 'divergenceIntervalMs'>; logger: Logger }, divergences: DivergenceService): () => Promise<void> {
  const intervalMs = ctx.config.divergenceIntervalMs;
  if (intervalMs === 0) return async () => {};
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
