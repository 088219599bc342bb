import type { Trx } from '../db/sql.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import type { OrderFoundBy, SyncJob } from '../sync-jobs/entity.ts';

/**
 * What a divergence-watch pass reads of other features, through their repositories (the stores',
 * the sync jobs', the fulfillments'), handed in by the composition root (src/services.ts).
 */
export interface WatchedResellerStores {
  /** The store unless deleted. */
  findActive(id: string): Promise<ResellerStore | null>;
}

export interface WatchedSuppliers {
  /** A reseller store's active suppliers, oldest first. */
  activeInOrderOf(resellerStoreId: string): Promise<SourceStore[]>;
  /**
   * The deleted records of the same supplier as these (same reseller store, owner, platform and shop
   * domain: src/source-stores/former-records.ts): the orders they placed are listed by the supplier's store with the active record's.
   */
  formerRecordsOf(sourceStoreIds: string[]): Promise<string[]>;
}

export interface WatchedJobs {
  /** The jobs that placed these orders on this supplier store, by supplier order id. */
  bySourceOrders(sourceStoreId: string, sourceOrderIds: string[]): Promise<Map<string, SyncJob>>;
  /**
   * Of these jobs (by id: the reference a listed order carries), those of this supplier store whose
   * supplier order is in doubt: sent, but its id never learnt (the answer was lost).
   */
  inDoubtAmong(sourceStoreId: string, syncJobIds: string[]): Promise<Map<string, SyncJob>>;
  /**
   * Of these jobs (by id, as `inDoubtAmong`), those of this supplier store ended unplaced after
   * sending their order: a whole-order cancellation's lookup by reference found nothing
   * (`not_placed`), yet an order whose reference names the job is listed.
   */
  unplacedAmong(sourceStoreId: string, syncJobIds: string[]): Promise<Map<string, SyncJob>>;
  /**
   * Records on a job ended unplaced (`completed`, no order) the supplier order a pass listed with its
   * reference, with audit entry `sync_job.order_found` naming the pass: a job whose whole-order
   * cancellation, not over, looks the order up by its reference (its retry then cancels that order,
   * where its own lookup may stop at its page bound), or one whose cancellation ended `not_placed`
   * and whose order is listed shipped (its shipments are then its own). The one write of this port.
   * Whether it was recorded now.
   */
  recordFoundOrder(syncJobId: string, sourceOrderId: string, foundBy: Extract<OrderFoundBy, { by: 'divergence_watch' }>): Promise<boolean>;
  /**
   * Which of these orders of a reseller store have a sync job, however it was made: one a reseller
   * routed by hand (POST /v1/sync_jobs) has jobs and a supplier order, and no `routed_orders` row.
   */
  ordersWithJobs(resellerStoreId: string, externalOrderIds: string[]): Promise<Set<string>>;
}

export interface WatchedFulfillments {
  /** The identities (`<job id>:<dedupe key>`) of the fulfillments these jobs already have, and their tracking numbers (`<job id>#number:<number>`). */
  keysOf(syncJobIds: string[]): Promise<Set<string>>;
}

export interface WatchReads {
  resellerStores: WatchedResellerStores;
  suppliers: WatchedSuppliers;
  jobs: WatchedJobs;
  fulfillments: WatchedFulfillments;
}

/**
 * The active reseller stores due a scheduled pass (none running, none started within the interval),
 * read in the transaction that starts them: the reseller stores' `storesDueIn`.
 */
export type StoresDue = (trx: Trx, runs: 'watch_passes', intervalMs: number, limit: number) => Promise<{ id: string; ownerId: string }[]>;
