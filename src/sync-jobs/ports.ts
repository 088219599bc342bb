import type { Trx } from '../db/sql.ts';
import type { AttemptEntry } from '../attempts/entity.ts';
import type { CancellationView } from '../cancellations/present.ts';
import type { Fulfillment } from '../fulfillments/entity.ts';
import type { Platform } from '../orders/types.ts';
import type { SourceStore } from '../source-stores/entity.ts';

/** A job's fulfillments, as its GET shows them: the fulfillments' repository, handed in by the composition root (src/services.ts). */
export interface FulfillmentReads {
  listForJob(syncJobId: string): Promise<Fulfillment[]>;
}

/**
 * A job's cancellations with their timelines, as its GET shows them, and the storefront's recorded
 * cancellations applied to an order's new jobs: the cancellations feature, handed in by the composition root.
 */
export interface CancellationReads {
  viewsOfJob(syncJobId: string): Promise<CancellationView[]>;
  /** In the caller's transaction, as routing does: an order cancelled before its jobs existed ends them unplaced (or cuts them). */
  applyAtRouting(trx: Trx, orders: { resellerStoreId: string; externalOrderId: string }[]): Promise<void>;
}

/** The timeline entries of rows (jobs, fulfillments), each row's oldest first: the retry framework's, handed in by the composition root. */
export interface AttemptTimelines {
  find(rowIds: string[]): Promise<AttemptEntry[]>;
}

/**
 * The ids of an owner's storefronts on a platform, deleted ones included: the list filter
 * `external_order_id` reads an id as a number on platform_a and platform_b and as given on custom
 * ones. The reseller stores' repository, handed in by the composition root.
 */
export interface Storefronts {
  idsOnPlatform(ownerId: string, platform: Platform): Promise<string[]>;
}

/**
 * The other active suppliers of a supplier's reseller store whose vendor tag folds like its own
 * (twins an older fold let in, Migration20261127041900), sorted: a manual job's attempt places
 * nothing for a supplier that has one. The source stores' feature, handed in by the composition root
 * (src/workers/kinds.ts).
 */
export interface SupplierTwins {
  activeTwinsOf(source: { id: string; resellerStoreId: string; vendorTag: string }): Promise<string[]>;
}

/**
 * The storefront's cancellations of some lines, applied to manual jobs once they are placed: such a
 * job has no order until its attempt reads and places it, so a partial cancellation that arrived before
 * found nothing to cut. Runs in the transaction recording the placement, once the order is stored. The
 * cancellations feature (`CancellationService.applyToPlacedIn`), handed in by the composition root
 * (src/workers/kinds.ts).
 */
export interface PlacedManualJobs {
  applyToPlacedIn(trx: Trx, placed: { id: string; resellerStoreId: string; externalOrderId: string }[]): Promise<void>;
}

/**
 * The active record that answers for a deleted supplier record (src/source-stores/former-records.ts:
 * the same reseller store, owner, platform and shop domain): a job of a supplier deleted and created
 * again is attempted through it. The source stores' repository, handed in by the composition root
 * (src/workers/kinds.ts).
 */
export interface SupplierSuccessors {
  /** For each of these source store ids that is a deleted record with an active successor: the deleted record, and that successor. */
  successorsOf(sourceStoreIds: string[]): Promise<Map<string, { former: SourceStore; active: SourceStore }>>;
}
