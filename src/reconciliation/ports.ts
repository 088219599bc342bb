import type { Trx } from '../db/sql.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';

/** The reseller stores a run reconciles, as this feature reads them: the reseller stores' repository, handed in by the composition root (src/services.ts). */
export interface ReconciledStores {
  /** The store, unless it was deleted (a deleted store is not reconciled). */
  findActive(id: string): Promise<ResellerStore | null>;
}

/**
 * The active reseller stores due a scheduled run (none running, none started within the interval),
 * read in the transaction that starts them: the reseller stores' `storesDueIn`.
 */
export type StoresDue = (trx: Trx, runs: 'reconciliation_runs', intervalMs: number, limit: number) => Promise<{ id: string; ownerId: string }[]>;
