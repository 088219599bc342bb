import type { CancellationStats } from '../cancellations/stats.ts';

/** A store's cancellations counted (its stats' `cancellations`): the cancellations feature, handed in by the composition root (src/services.ts). */
export interface CancellationCounts {
  statsOf(resellerStoreId: string): Promise<CancellationStats>;
}
