import type { DIVERGENCE_TYPES } from '../../contract/divergences.ts';
import type { CancellationStats } from '../cancellations/stats.ts';
import type { Trx } from '../db/sql.ts';

/** Open entries of a store's to-do list, one count per divergence type. */
export type DivergenceCounts = Record<(typeof DIVERGENCE_TYPES)[number], number>;

/**
 * The store's open divergences by type (the stats' `attention`), as this feature reads them: the
 * divergence list's repository (src/divergence-watch/), handed in by the composition root.
 */
export interface AttentionReads {
  attention(resellerStoreId: string): Promise<DivergenceCounts>;
}


/** A store's cancellations counted (its stats' `cancellations`): the cancellations feature, handed in by the composition root (src/services.ts). */
export interface CancellationCounts {
  statsOf(resellerStoreId: string): Promise<CancellationStats>;
}

/** A store's suppliers, deleted with it in its transaction: the source stores' repository, handed in by the composition root. */
export interface StoreSuppliers {
  softDeleteAllOfIn(trx: Trx, resellerStoreId: string, at: Date): Promise<void>;
}
