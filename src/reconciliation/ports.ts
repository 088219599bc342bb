import type { Trx } from '../db/sql.ts';
import type { OrderStore } from '../orders/port.ts';
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

/**
 * Records the storefront's cancellation of an order a run lists cancelled and that nobody routed,
 * as its lost orders/cancelled webhook would have (order-changes.md: recorded, and an orders/create
 * arriving later routes the order as cancelled). The order module's `OrderCancelling.cancel`, under
 * the divergence watch's one key per order (the composition root, src/services.ts), so runs that list
 * the order again, a watch pass and the order's own late webhook are all one cancellation.
 */
export type ListedCancellations = (store: OrderStore, externalOrderId: string, reconciliationId: string) => Promise<void>;
