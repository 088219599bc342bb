import type { Trx } from '../db/sql.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { Fulfillment } from './entity.ts';
import type { OrderFoundBy, SyncJob } from '../sync-jobs/entity.ts';
import type { SourceStore } from '../source-stores/entity.ts';

/**
 * The sync jobs a fulfillment belongs to, as this feature reads them: the sync jobs' repository,
 * handed in by the composition root (src/services.ts, src/workers/kinds.ts).
 */
export interface SyncJobReads {
  findById(id: string): Promise<SyncJob | null>;
  /** Which of these source stores have a job that could own an order the service never recorded. */
  storesWithOrdersInDoubt(sourceStoreIds: string[], before: Date): Promise<string[]>;
}

/** The reseller stores fulfillments are added to: the reseller stores' repository, handed in by the composition root. */
export interface ResellerStoreReads {
  /** Deleted ones included. */
  findById(id: string): Promise<ResellerStore | null>;
  findActiveByIds(ids: string[]): Promise<ResellerStore[]>;
}

/**
 * What other features write when a fulfillment is recorded, in the transaction that records it
 * (the reseller's to-do list: tracking arrived, so the job's `stale` entry is resolved). Handed in
 * by the composition root (src/services.ts, src/workers/kinds.ts).
 */
export type FulfillmentRecorded = (trx: Trx, fulfillment: Fulfillment) => Promise<void>;

/**
 * The jobs ended unplaced after sending their order that a shipment of an order no job recorded may
 * belong to (src/fulfillments/unplaced.ts): the sync jobs' repository, handed in by the composition root.
 */
export interface UnplacedJobs {
  findBySourceOrder(sourceStoreIds: string[], sourceOrderId: string): Promise<SyncJob | null>;
  /** Which of these source stores have a recent job ended unplaced after sending its order (a cancellation's lookup by reference found nothing), created before `before`. */
  storesWithUnplacedOrders(sourceStoreIds: string[], before: Date): Promise<string[]>;
  /** This source store's jobs ended unplaced after sending their order, created before `before` at any age, newest first, at most `limit`. */
  unplacedOf(sourceStoreId: string, before: Date, limit: number): Promise<SyncJob[]>;
  /** Of these jobs (by id), those of this source store ended unplaced after sending their order, by id. */
  unplacedAmong(sourceStoreId: string, syncJobIds: string[]): Promise<Map<string, SyncJob>>;
  /** Records on a job ended unplaced the supplier order a shipment named, found to be its own after all (audit `sync_job.order_found`); whether it was recorded now. */
  recordFoundOrder(syncJobId: string, sourceOrderId: string, foundBy: OrderFoundBy): Promise<boolean>;
}

/**
 * Reports a shipment that may be the order of these jobs ended unplaced, which the service could not
 * attribute: the cancellations' `shipmentUnattributed`, handed in by the composition root.
 */
export interface UnattributedShipmentReports {
  /** Returns how many to-do entries were raised. */
  shipmentUnattributed(jobs: SyncJob[], shipment: { sourceStoreId: string; sourceOrderId: string; trackingNumbers: string[]; why: string }): Promise<number>;
}

/** The supplier store a held shipment came from, to read its order: the source stores' repository (deleted ones are not read). */
export interface SourceStoreReads {
  findActive(id: string): Promise<SourceStore | null>;
  /** The active record of the same supplier that replaced this deleted one (src/source-stores/former-records.ts), if any. */
  activeRecordReplacing(formerId: string): Promise<SourceStore | null>;
  /** The deleted records of the same supplier as these active ones (src/source-stores/former-records.ts). */
  formerRecordsOf(sourceStoreIds: string[]): Promise<string[]>;
}

/**
 * The deleted records of the same supplier as these active ones (same reseller store, owner,
 * platform and shop domain): the source stores' repository, handed in by the composition root
 * (src/source-stores/former-records.ts). Their jobs' orders now come through the active record.
 */
export interface FormerSupplierRecords {
  formerRecordsOf(sourceStoreIds: string[]): Promise<string[]>;
}
