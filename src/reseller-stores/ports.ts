import type { DIVERGENCE_TYPES } from '../../contract/divergences.ts';

/** Open entries of a store's to-do list, one count per divergence type. */
export type DivergenceCounts = Record<(typeof DIVERGENCE_TYPES)[number], number>;

/**
 * The store's open divergences by type (the stats' `attention`), as this feature reads them: the
 * divergence list's repository (src/divergence-watch/), handed in by the composition root.
 */
export interface AttentionReads {
  attention(resellerStoreId: string): Promise<DivergenceCounts>;
}
