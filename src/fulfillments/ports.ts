import type { Trx } from '../db/sql.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { Fulfillment } from './entity.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';

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
