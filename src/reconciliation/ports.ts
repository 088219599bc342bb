import type { ResellerStore } from '../reseller-stores/entity.ts';

/** The reseller stores a run reconciles, as this feature reads them: the reseller stores' repository, handed in by the composition root (src/services.ts). */
export interface ReconciledStores {
  /** The store, unless it was deleted (a deleted store is not reconciled). */
  findActive(id: string): Promise<ResellerStore | null>;
}
