import type { PricingConfig } from '../../contract/pricing.ts';
import type { AttemptEntry } from '../attempts/entity.ts';
import type { AttemptWrite } from '../attempts/repository.ts';
import type { Trx } from '../db/sql.ts';
import type { SupplierLine } from '../platforms/types.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import type { OrderFoundBy, SupplierCancelled, SyncJob } from '../sync-jobs/entity.ts';

/**
 * The reseller's to-do list (order-changes.md, "The divergence watch"), as this feature writes to it:
 * an entry raised in the transaction of the change that causes it. The divergence list's repository
 * (src/divergence-watch/), handed in by the composition root (src/services.ts).
 */
export interface DivergenceRaising {
  raise(
    trx: Trx,
    entry: { ownerId: string; resellerStoreId: string; syncJobId: string; type: 'too_late' | 'supplier_cancelled'; subjectId?: string; detail: string | null },
    /** The entry's id; null when the job has one of that type already, open or dismissed. */
  ): Promise<string | null>;
  /** Resolves the job's open entry of that type, in the caller's transaction. */
  resolve(trx: Trx, syncJobId: string, type: 'stale'): Promise<unknown>;
  /** Resolves the open entries of these types of these jobs, in one statement in the caller's transaction. */
  resolveOfJobs(trx: Trx, syncJobIds: string[], types: ('cancellation_dead' | 'unsupported' | 'supplier_cancelled')[]): Promise<unknown>;
  /** Says what the job's open entry of that type is about now (its `detail`), in the caller's transaction. */
  describe(trx: Trx, syncJobId: string, type: 'supplier_cancelled', detail: string | null): Promise<unknown>;
}

/** The timeline entries of rows, each row's oldest first: the retry framework's, handed in by the composition root. */
export interface AttemptTimelines {
  find(rowIds: string[]): Promise<AttemptEntry[]>;
}

/**
 * The active record that answers for a deleted supplier record (src/source-stores/former-records.ts:
 * the same reseller store, owner, platform and shop domain), as a cancellation's attempt needs it: the
 * orders placed through a record deleted and created again are still open at the supplier, and only
 * the active record's credentials reach it. The source stores' repository, handed in by the
 * composition root (src/workers/kinds.ts).
 */
export interface SupplierSuccessors {
  /** For each of these source store ids that is a deleted record with an active successor: the deleted record, and that successor. */
  successorsOf(sourceStoreIds: string[]): Promise<Map<string, { former: SourceStore; active: SourceStore }>>;
}

/**
 * The deleted records of the same supplier as these active ones (src/source-stores/former-records.ts),
 * for whose jobs in doubt a supplier's cancellation is held too: the source stores' repository, handed
 * in by the composition root.
 */
export interface SupplierFormerRecords {
  formerRecordsOf(sourceStoreIds: string[]): Promise<string[]>;
}

/**
 * The sync jobs cancellations act on, as this feature reads and writes them: the sync jobs'
 * repository (src/sync-jobs/), handed in by the composition root (src/services.ts,
 * src/workers/kinds.ts). `…In` runs in the caller's transaction, beside this feature's own statements.
 */
export interface CancelledJobs {
  /** The order's jobs as this transaction sees them, oldest first. */
  ofOrderIn(trx: Trx, resellerStoreId: string, externalOrderId: string): Promise<SyncJob[]>;
  /** The job that placed this supplier order on one of these source store records, if any. */
  findBySourceOrder(sourceStoreIds: string[], sourceOrderId: string): Promise<SyncJob | null>;
  /**
   * Which of these source stores have a job that could own a supplier order it never recorded (sent,
   * its id never learnt), created before `before`: a supplier's cancellation of an unknown order is held for them.
   */
  storesWithOrdersInDoubt(sourceStoreIds: string[], before: Date): Promise<string[]>;
  /** The job as it is now (polled while its placement is in flight). */
  findCurrent(id: string): Promise<SyncJob | null>;
  /** Jobs with their source store, unless deleted (an attempt's work). */
  loadWithSources(jobIds: string[]): Promise<{ row: SyncJob; source: SourceStore | null }[]>;
  /** Replaces a job's stored order (cut by some lines before it was placed); version-checked. */
  replaceOrderIn(trx: Trx, job: SyncJob): Promise<boolean>;
  /** The supplier's own cancellation recorded on a job (`lines` null: the whole order), the job's row locked for the caller's transaction; null when none. */
  supplierCancellationIn(trx: Trx, syncJobId: string): Promise<SupplierCancelled | null>;
  /** Records a supplier's own cancellation on a job: the first, or one that cancelled more of the order than the one recorded. */
  markSupplierCancelledIn(trx: Trx, syncJobId: string, cancelled: SupplierCancelled): Promise<void>;
  /**
   * Keeps a job's supplier lines as a read of its order gave them, when it kept none from the create
   * answer (placed before they were kept, or found by its reference after a lost answer).
   */
  keepSupplierLines(syncJobId: string, lines: SupplierLine[]): Promise<void>;
  /**
   * Records, in the caller's transaction, on a job ended unplaced (VOID) the supplier order found by
   * the job's reference (an answer lost, then the job died): its fulfillments and the supplier's
   * cancellation then find the job, and the job no longer counts as having sent an order it never
   * learned: the order a divergence-watch pass listed still open for a job whose whole-order
   * cancellation ended `not_placed` (`cancelFoundOrder`), or one found for a voided job whose dead
   * cancellation it re-opens (`recordFoundOrderOfVoided`: by a pass, or by a cancellation's lookup).
   * Whether it was recorded now (false: the job has an order already, or is not one ended unplaced).
   */
  recordFoundOrderIn(trx: Trx, syncJobId: string, sourceOrderId: string, foundBy: Extract<OrderFoundBy, { by: 'divergence_watch' | 'cancellation' }>): Promise<boolean>;
  /** Version-checked writes of jobs ended unplaced (VOID), with their audit entries. */
  writeVoidsIn(trx: Trx, writes: AttemptWrite<SyncJob>[]): Promise<boolean[]>;
}

/** The suppliers' vendor tags, as a cancellation matches lines to jobs: the source stores' repository, handed in by the composition root. */
export interface SupplierVendorTags {
  /** The vendor tags and pricing of these suppliers, by id, as this transaction sees them. */
  supplierTermsIn(trx: Trx, sourceStoreIds: string[]): Promise<Map<string, SupplierTerms>>;
  /** A supplier's vendor tag and pricing (its `field_rules` may change a line's SKU on its orders); null when it is gone. */
  supplierTermsOf(sourceStoreId: string): Promise<SupplierTerms | null>;
}

/** A supplier's vendor tag (its lines of an order) and pricing (its `field_rules` may change a line's SKU on its orders). */
export interface SupplierTerms {
  vendorTag: string;
  pricingConfig: PricingConfig;
}

/** The fulfillments recorded for jobs, as a cancellation's outcome checks them: the fulfillments' repository, handed in by the composition root. */
export interface RecordedShipments {
  /** Which of these jobs have a fulfillment recorded, as this transaction sees them. */
  jobsShippedIn(trx: Trx, syncJobIds: string[]): Promise<Set<string>>;
}
