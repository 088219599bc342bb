import type { Logger } from 'pino';
import { connectionOf } from '../attempts/store-connection.ts';
import { PlatformError, type PlatformAdapters } from '../platforms/types.ts';
import type { SecretBox } from '../shared/secrets.ts';
import { unstorablePathIn } from '../shared/text.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import type { OrderFoundBy, SyncJob } from '../sync-jobs/entity.ts';
import type { FormerSupplierRecords, UnattributedShipmentReports, UnplacedJobs } from './ports.ts';

/** At most this many jobs ended unplaced of one sender are told of a shipment the service could not attribute (the newest). */
const UNATTRIBUTED_JOBS = 20;

/** A shipment of an order no job recorded, as the attribution to a job ended unplaced reads it. */
export interface UnownedShipment {
  sourceOrderId: string;
  trackingNumbers: string[];
  /** When it arrived: only jobs created before it can own its order. */
  receivedAt: Date;
}

/** What `ownerOf` learnt: the job ended unplaced whose order it is (now recorded on it), and the senders that could not tell. */
export interface UnplacedOwnership {
  job: SyncJob | null;
  /** The senders whose read of the order was refused for good (404, 403), and why: they could not tell whose the order is (`reportUnattributed`). */
  unreadable: Map<string, string>;
}

/**
 * A shipment of an order no job recorded, checked against the sender's jobs ended unplaced after
 * sending (their whole-order cancellation's lookup by reference found nothing: `not_placed`): a
 * supplier list that did not show the order makes that lookup miss an order that exists. Used by the
 * fulfillment webhook (before a shipment is held or dropped) and by the sweep's forgetting of held
 * shipments (a job in doubt when the shipment came, ended `not_placed` since), so the two decide alike.
 */
export class UnplacedShipments {
  constructor(
    private readonly deps: { platforms: PlatformAdapters; secrets: SecretBox; logger: Logger },
    private readonly jobs: UnplacedJobs,
    private readonly reports: UnattributedShipmentReports,
    /** A sender answers for its former records' jobs too (src/source-stores/former-records.ts). */
    private readonly formers: FormerSupplierRecords,
  ) {}

  /**
   * The job that placed this order after all, though it was ended unplaced. Only a sender with such
   * a job created before the shipment came, within the 60 days unknown shipments are read for
   * (`storesWithUnplacedOrders`), has the order read (one call), for the reference it carries; the
   * job it names records it (audit `sync_job.order_found`, `foundBy`), so the shipment is taken:
   * recorded, pushed to the customer, and the job's `not_placed` cancellation made `too_late` on the
   * reseller's to-do list. A read the supplier refuses for now (429, 5xx, no answer) throws its
   * retryable PlatformError: the caller tries again later (the webhook answers 503, the sweep keeps
   * the held shipment). A sender's former records (the deleted records of the same supplier it
   * replaced: same reseller store, owner, platform, domain) are checked after its own jobs, their
   * order read through the sender: a job of a deleted record can never look its order up itself.
   */
  async ownerOf(senders: SourceStore[], sourceOrderId: string, receivedAt: Date, foundBy: OrderFoundBy): Promise<UnplacedOwnership> {
    const unreadable = new Map<string, string>();
    const candidates = new Set(await this.jobs.storesWithUnplacedOrders(senders.map((store) => store.id), receivedAt));
    for (const store of senders) {
      // The sender's own jobs first, then its former records'.
      const formers = await this.formers.formerRecordsOf([store.id]);
      const owners = [...(candidates.has(store.id) ? [store.id] : []), ...(formers.length > 0 ? await this.jobs.storesWithUnplacedOrders(formers, receivedAt) : [])];
      if (owners.length === 0) continue;
      let reference: string | null;
      try {
        reference = (await this.deps.platforms[store.platform].readListedOrder(connectionOf(this.deps, store), sourceOrderId)).syncReference;
      } catch (error) {
        if (!(error instanceof PlatformError) || error.retryable) throw error;
        this.deps.logger.warn({ shop_domain: store.shopDomain, source_order_id: sourceOrderId, err: error.message }, 'supplier order of a fulfillment could not be read');
        unreadable.set(store.id, `reading the order answered ${error.status ?? 'an error'}: ${error.message.slice(0, 200)}`);
        continue;
      }
      if (reference === null || unstorablePathIn(reference) !== null) continue;
      for (const owner of owners) {
        const job = (await this.jobs.unplacedAmong(owner, [reference])).get(reference);
        if (!job) continue;
        await this.jobs.recordFoundOrder(job.id, sourceOrderId, foundBy);
        this.deps.logger.info({ sync_job_id: job.id, source_order_id: sourceOrderId, found_by: foundBy.by }, 'supplier order of a job ended unplaced found shipped: recorded on the job');
        return { job: await this.jobs.findBySourceOrder([owner], sourceOrderId), unreadable };
      }
    }
    return { job: null, unreadable };
  }

  /**
   * A shipment the service drops (no job recorded its order, none in doubt holds it any more) from a
   * sender with jobs ended unplaced after sending, whose order it read and got an error that will not
   * change (404, 403: `unreadable`). It may be one of those jobs' orders, so it is not dropped
   * unnoticed (order-changes.md): each such job created before it came (the newest UNATTRIBUTED_JOBS)
   * gets an audit entry and a `too_late` entry on the reseller's to-do list naming the shipment
   * (CancellationService.shipmentUnattributed). A sender whose order was read knows it is not theirs;
   * one whose jobs are all past the 60 days unknown shipments are read for reports nothing either:
   * every own sale of its supplier would write an audit entry per job, for ever.
   */
  async reportUnattributed(senders: SourceStore[], shipment: UnownedShipment, unreadable: Map<string, string>): Promise<void> {
    for (const store of senders) {
      const why = unreadable.get(store.id);
      if (why === undefined) continue;
      // Its own jobs ended unplaced and its former records' (whose order reads go through it), the newest.
      const stores = [store.id, ...(await this.formers.formerRecordsOf([store.id]))];
      const jobs = (await Promise.all(stores.map((id) => this.jobs.unplacedOf(id, shipment.receivedAt, UNATTRIBUTED_JOBS))))
        .flat()
        .sort((a, b) => new Date(b.createdAt).getTime() - new Date(a.createdAt).getTime())
        .slice(0, UNATTRIBUTED_JOBS);
      if (jobs.length === 0) continue;
      const raised = await this.reports.shipmentUnattributed(jobs, { sourceStoreId: store.id, sourceOrderId: shipment.sourceOrderId, trackingNumbers: shipment.trackingNumbers, why });
      this.deps.logger.warn(
        { shop_domain: store.shopDomain, source_order_id: shipment.sourceOrderId, sync_job_ids: jobs.map((job) => job.id), raised },
        'shipment of an order no job recorded, possibly of a job ended unplaced, could not be attributed: on the to-do list',
      );
    }
  }
}
