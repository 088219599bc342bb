import type { SourceStore } from './entity.ts';

/**
 * A supplier's former records: the deleted source stores of the same reseller store and owner, on
 * the same platform and shop domain, as an active one. A reseller who deletes a supplier and creates
 * it again (a new token, new settings: operations.md anticipates suppliers "deleted or re-created")
 * points the supplier's webhooks at the new record; the orders placed through the old one are still
 * the supplier's to ship or cancel, and their fulfillments and cancellations now come signed by the
 * new record. A deleted record never accepts a webhook itself (decisions.md) and never routes a line;
 * it only lets the active one of the same supplier answer for its placed orders. Another owner's or
 * another reseller store's records of the same supplier never do.
 */
export interface FormerRecords {
  formerRecordsOf(sourceStoreIds: string[]): Promise<string[]>;
}

interface JobsBySourceOrder<J> {
  findBySourceOrder(sourceStoreIds: string[], sourceOrderId: string): Promise<J | null>;
}

/**
 * The sync jobs' look-up by supplier order (the webhooks' port `JobsBySourceOrder`) widened to the
 * senders' former records: a job of the senders themselves first; only when none placed the order,
 * one that a former record of theirs placed. The job is the one the order was placed by, so its
 * de-duplication (a fulfillment's keys are per job) is the same however the delivery is addressed.
 */
export const jobsOfSupplierRecords = <J>(jobs: JobsBySourceOrder<J>, stores: FormerRecords): JobsBySourceOrder<J> => ({
  async findBySourceOrder(sourceStoreIds: string[], sourceOrderId: string): Promise<J | null> {
    const own = await jobs.findBySourceOrder(sourceStoreIds, sourceOrderId);
    if (own) return own;
    const former = await stores.formerRecordsOf(sourceStoreIds);
    return former.length > 0 ? jobs.findBySourceOrder(former, sourceOrderId) : null;
  },
});

/**
 * The store a deleted record's work calls through the active record that replaced it (a cancellation
 * of its order, src/cancellations/attempt.ts; a retry of its sync job, src/sync-jobs/attempt.ts):
 * `active`'s id and credentials (so its own pacing), with the deleted record's vendor tag, vendor key
 * and pricing, by which the job's lines were matched and its supplier SKUs and prices are made.
 */
export function answeringFor(former: SourceStore, active: SourceStore): SourceStore {
  return { ...active, vendorTag: former.vendorTag, vendorKey: former.vendorKey, pricingMode: former.pricingMode, pricingConfig: former.pricingConfig };
}

/** A source store record as a held shipment or cancellation names it: its id, and whose it is. */
export interface HoldingRecord {
  id: string;
  ownerId: string;
  resellerStoreId: string;
}

/**
 * These senders of a supplier's webhook and their former records (each of its sender's owner and
 * reseller store): a shipment or a supplier's cancellation of an order no job recorded is held for
 * whichever of them has a job in doubt, since a former record's job can still learn its order (its
 * retry goes through the record that replaced it).
 */
export async function withFormerRecords<S extends HoldingRecord>(senders: S[], stores: FormerRecords): Promise<(S | HoldingRecord)[]> {
  const formers = await Promise.all(
    senders.map(async (sender) => (await stores.formerRecordsOf([sender.id])).map((id) => ({ id, ownerId: sender.ownerId, resellerStoreId: sender.resellerStoreId }))),
  );
  return [...senders, ...formers.flat()];
}
