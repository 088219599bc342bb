import { insertAudit, SYSTEM_ACTOR } from '../audit-log/repository.ts';
import type { Outbox } from '../events/outbox.ts';
import { fulfillmentKind } from './kind.ts';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/index.ts';
import type { SourceFulfillment, Tracking } from '../orders/types.ts';
import { newMessageId, type Queue } from '../queue/queue.ts';
import type { PlatformAdapters } from '../platforms/types.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import { withFormerRecords, type HoldingRecord } from '../source-stores/former-records.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';
import { newId } from '../shared/ids.ts';
import { retryByHand } from '../attempts/manual-retry.ts';
import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import type { Trx } from '../db/sql.ts';
import { fulfillmentAuditRecord } from './attempt.ts';
import type { Fulfillment } from './entity.ts';
import { fulfillmentEvent } from './events.ts';
import { addedNumbersKey, type FulfillmentKeys } from './identity.ts';
import type { FulfillmentRecorded, ResellerStoreReads, SourceStoreReads, SyncJobReads } from './ports.ts';
import type { FulfillmentRepository, HeldRow } from './repository.ts';
import type { UnplacedShipments } from './unplaced.ts';
import { PlatformError } from '../platforms/types.ts';

/** Held fulfillments turned into fulfillments per sweep. */
const CLAIMS_PER_PASS = 200;

/** Held fulfillments no job can own any more looked at (and forgotten) per sweep. */
const FORGETS_PER_PASS = 200;

/**
 * How long after it came a held fulfillment whose supplier order cannot be read for now (429, 5xx,
 * no answer) is kept to read it again at each sweep: past that it is reported as one whose read is
 * refused for good, then forgotten, so a supplier that never answers costs no read per sweep for ever.
 */
const HELD_READ_GIVE_UP_MS = 7 * 24 * 60 * 60_000;

/** What the fulfillments' service works with, built once by the composition root (src/services.ts). */
export interface FulfillmentServiceDeps {
  fulfillments: FulfillmentRepository;
  queue: Queue;
  metrics: Metrics;
  logger: Logger;
  platforms: PlatformAdapters;
  outbox: Outbox;
  /** A shipment of an order no job recorded, checked against the jobs ended unplaced that may own it (the webhook's and the sweep's). */
  unplaced: UnplacedShipments;
  /** The supplier store a held shipment came from, read before it is forgotten. */
  sourceStores: SourceStoreReads;
}

export class FulfillmentService {
  private readonly fulfillments: FulfillmentRepository;
  /** The check of a shipment of an order no job recorded against the jobs ended unplaced (src/fulfillments/unplaced.ts). */
  readonly unplaced: UnplacedShipments;

  constructor(
    private readonly deps: FulfillmentServiceDeps,
    private readonly jobs: SyncJobReads,
    private readonly resellerStores: ResellerStoreReads,
    /** Run in the transaction of every fulfillment recorded (see `FulfillmentRecorded`). */
    private readonly onRecorded: readonly FulfillmentRecorded[],
  ) {
    this.fulfillments = deps.fulfillments;
    this.unplaced = deps.unplaced;
  }

  /**
   * Records a supplier's fulfillment of a job and queues its propagation, once: a delivery under a
   * webhook id, or with an identity, that the job already has finds the existing record. Concurrent
   * deliveries are serialised by an advisory lock on the job; the unique indexes are the backstop.
   * Tracking without a number, for a reseller platform that needs one, is recorded `skipped`: it is
   * never sent, so never retried to death. `heldId` names the held fulfillment this one replaces.
   */
  async receive(
    job: SyncJob,
    tracking: Tracking,
    keys: FulfillmentKeys,
    heldId?: string,
    /** Writes more about a fulfillment this call records, in its transaction (the divergence watch's `fulfillment.reconciled` audit entry and event). */
    recorded?: (trx: Trx, fulfillment: Fulfillment) => Promise<void>,
  ): Promise<{ fulfillment: Fulfillment; created: boolean }> {
    const skipReason = await this.skipReasonFor(job, tracking);
    const result = await this.fulfillments.transaction(async (trx) => {
      if (heldId) await this.fulfillments.deleteHeld(trx, [heldId]);
      const existing = await this.fulfillments.lockAndFind(trx, job.id, keys);
      let record = { tracking, dedupeKey: keys.dedupeKey, webhookId: keys.webhookId };
      if (existing) {
        const added = keys.platformFulfillment && (await this.addedNumbers(trx, job.id, keys, keys.platformFulfillment, tracking));
        if (!added) return { fulfillment: existing, created: false };
        record = added;
      }
      const now = new Date();
      const fulfillment = {
        ...fulfillmentKind.initialColumns(now),
        id: newId('fulfillment'),
        ownerId: job.ownerId,
        resellerStoreId: job.resellerStoreId,
        syncJobId: job.id,
        dedupeKey: record.dedupeKey,
        webhookId: record.webhookId,
        tracking: record.tracking,
        queueMessageId: skipReason ? null : newMessageId(),
        version: 1,
        createdAt: now,
        updatedAt: now,
      } as Fulfillment;
      const audits = [fulfillmentAuditRecord(fulfillment, 'fulfillment.received', { trackingNumbers: record.tracking.numbers })];
      if (skipReason) {
        fulfillmentKind.transition(fulfillment, { type: 'SKIP', reason: skipReason, at: now.toISOString() }, now);
        audits.push(fulfillmentAuditRecord(fulfillment, 'fulfillment.skipped', { reason: skipReason }));
      }
      await this.fulfillments.insert(trx, fulfillment);
      await insertAudit(trx, audits, now);
      for (const hook of this.onRecorded) await hook(trx, fulfillment);
      if (recorded) await recorded(trx, fulfillment);
      if (fulfillment.queueMessageId) {
        await this.deps.queue.insertIn(trx, fulfillmentKind.queue, [{ id: fulfillment.queueMessageId, message: fulfillmentKind.message(fulfillment.id) }]);
      }
      return { fulfillment, created: true };
    });
    if (result.created) this.deps.metrics.attemptTransitions.inc({ kind: 'fulfillment', status: result.fulfillment.status });
    return result;
  }

  /**
   * What a fulfillment the platform names by id, already recorded, shows that no record of it has
   * carried: tracking numbers the supplier added to it after its first record (fulfilled first, the
   * carrier's number added later). They are recorded and pushed as a fulfillment of their own, with
   * only those numbers (the customer was sent the others already), under a key of all the numbers
   * it shows now, so the same view again adds nothing. Null when it shows nothing new.
   */
  private async addedNumbers(trx: Trx, syncJobId: string, keys: FulfillmentKeys, platformFulfillment: { addedPrefix: string }, tracking: Tracking) {
    if (tracking.numbers.length === 0) return null;
    const recorded = await this.fulfillments.numbersRecordedIn(trx, syncJobId, keys.dedupeKey, platformFulfillment.addedPrefix);
    const added = tracking.numbers.flatMap((number, index) => (recorded.has(number) ? [] : [{ number, index }]));
    if (added.length === 0) return null;
    // Links go with their numbers when there is one per number; otherwise all of them are kept.
    const urls = tracking.urls.length === tracking.numbers.length ? added.map(({ index }) => tracking.urls[index]!) : tracking.urls;
    return {
      tracking: { ...tracking, numbers: added.map(({ number }) => number), urls },
      dedupeKey: addedNumbersKey(platformFulfillment, tracking.numbers),
      // Its first record keeps the delivery's webhook id; a redelivery finds that one and these numbers recorded.
      webhookId: null,
    };
  }

  /**
   * A fulfillment of an order no job has recorded. When one of these senders (or a former record of
   * theirs: `withFormerRecords`) has a job that could own the order (it sent its supplier order and never learned the id: the answer was lost, or is
   * still on its way), the fulfillment is held until such a job completes with that order id (see
   * `claimHeld`); otherwise it is the supplier's own sale and there is nothing to do. Returns whether
   * it was held.
   */
  async holdUnlessUnowned(senders: SourceStore[], fulfillment: SourceFulfillment, keys: FulfillmentKeys): Promise<boolean> {
    const receivedAt = new Date();
    const candidates = await withFormerRecords(senders, this.deps.sourceStores);
    const owners = new Set(await this.jobs.storesWithOrdersInDoubt(candidates.map((store) => store.id), receivedAt));
    const holders = candidates.filter((store) => owners.has(store.id));
    await this.hold(holders, fulfillment, keys, receivedAt);
    return holders.length > 0;
  }

  /**
   * A fulfillment of an order that a job of `store` placed but never learnt the id of (the order's
   * reference names the job: the divergence watch), held for it as `holdUnlessUnowned` holds one,
   * with no look-up: were the job to complete with that order meanwhile, the next claims take it.
   */
  async holdFor(store: HoldingRecord, fulfillment: SourceFulfillment, keys: FulfillmentKeys, watchPassId: string): Promise<void> {
    await this.hold([store], fulfillment, keys, new Date(), watchPassId);
  }

  /**
   * Records tracking the divergence watch found on a supplier order (no webhook brought it), as
   * `receive` does, with the audit entry and event `fulfillment.reconciled` in its transaction.
   * `heldId`: the held fulfillment a pass kept for a job in doubt, now claimed by that job.
   */
  receiveReconciled(job: SyncJob, tracking: Tracking, keys: FulfillmentKeys, watchPassId: string, heldId?: string): Promise<{ fulfillment: Fulfillment; created: boolean }> {
    return this.receive(job, tracking, keys, heldId, (trx, fulfillment) => this.recordReconciled(trx, fulfillment, watchPassId));
  }

  private async recordReconciled(trx: Trx, fulfillment: Fulfillment, watchPassId: string): Promise<void> {
    await insertAudit(trx, [
      {
        ...fulfillmentAuditRecord(fulfillment, 'fulfillment.reconciled', { watchPassId, trackingNumbers: fulfillment.tracking.numbers }),
        actorId: SYSTEM_ACTOR,
      },
    ]);
    await this.deps.outbox.append(trx, [fulfillmentEvent('fulfillment.reconciled', fulfillment, [])]);
  }

  private async hold(holders: HoldingRecord[], fulfillment: SourceFulfillment, keys: FulfillmentKeys, receivedAt: Date, watchPassId: string | null = null): Promise<void> {
    await this.fulfillments.hold(
      holders.map((store) => ({
        id: newId('heldFulfillment'),
        ownerId: store.ownerId,
        resellerStoreId: store.resellerStoreId,
        sourceStoreId: store.id,
        sourceOrderId: fulfillment.sourceOrderId,
        keys,
        tracking: fulfillment.tracking,
        receivedAt,
        watchPassId,
      })),
    );
  }

  /**
   * Turns held fulfillments whose order a job has since recorded into fulfillments of that job, and
   * forgets those no job can own any more (`forgetUnowned`). Run by the sweep. One that cannot be
   * claimed (an error of its own) is kept for the next sweep, and the others are claimed and checked
   * all the same. Returns how many were claimed and forgotten.
   */
  async claimHeld(): Promise<{ claimed: number; forgotten: number }> {
    const claimable = await this.fulfillments.findClaimable(CLAIMS_PER_PASS);
    let claimed = 0;
    const failed: string[] = [];
    for (const held of claimable) {
      try {
        if (await this.claim(held)) claimed++;
      } catch (error) {
        failed.push(held.id);
        this.deps.logger.error({ err: error, held_fulfillment_id: held.id, job_id: held.syncJobId, source_order_id: held.sourceOrderId }, 'held fulfillment could not be claimed by its job: kept for the next sweep');
      }
    }
    // Behind the others at the next passes: however many keep failing, each pass reaches the rest.
    await this.fulfillments.markKept(failed, new Date());
    const forgetting = await this.forgetUnowned();
    return { claimed: claimed + forgetting.claimed, forgotten: forgetting.forgotten };
  }

  /** A held fulfillment made a fulfillment of the job that recorded its order; whether one was created now. */
  private async claim(held: HeldRow & { syncJobId: string }): Promise<boolean> {
    const job = await this.jobs.findById(held.syncJobId);
    if (!job) return false;
    // One a pass found (no webhook brought it) is the watch's repair, audited and announced as such.
    const { created } = held.watchPassId
      ? await this.receiveReconciled(job, held.tracking, held.keys, held.watchPassId, held.id)
      : await this.receive(job, held.tracking, held.keys, held.id);
    this.deps.logger.info({ job_id: job.id, source_order_id: held.sourceOrderId, created }, 'held fulfillment claimed by its job');
    return created;
  }

  /**
   * Forgets held fulfillments no job can own any more: the job in doubt when each came completed
   * with another order, or was ended unplaced (its whole-order cancellation's lookup by reference
   * found nothing: `not_placed`). That lookup misses an order a supplier list does not show, so one
   * whose store has such a job ended unplaced, created before it came, is first checked as its
   * webhook would be now (src/fulfillments/unplaced.ts): the order is read, and a job ended unplaced
   * its reference names records it and takes the shipment (pushed to the customer, the cancellation
   * `too_late` on the to-do list); a read refused for good (404, 403) puts it on the to-do list of
   * those jobs (`reportUnattributed`) before it is forgotten; a read that answers, naming no such job,
   * shows the supplier's own sale. A read refused for now (429, 5xx) keeps it for the next sweep,
   * for HELD_READ_GIVE_UP_MS after it came; then it is reported as a read refused for good. A kept
   * one is marked (`markKept`) and read again after every one not tried since: FORGETS_PER_PASS
   * bounds a pass, and a supplier that never answers must not take it all.
   */
  private async forgetUnowned(): Promise<{ claimed: number; forgotten: number }> {
    const unowned = await this.fulfillments.findUnowned(FORGETS_PER_PASS);
    let claimed = 0;
    let forgotten = 0;
    const kept: string[] = [];
    for (const held of unowned) {
      let decided: 'claimed' | 'kept' | 'forget';
      try {
        decided = await this.beforeForgetting(held);
      } catch (error) {
        // One row's failure (a database error, say) keeps that row for the next sweep; the others go on.
        this.deps.logger.error({ err: error, held_fulfillment_id: held.id, source_order_id: held.sourceOrderId }, 'held fulfillment could not be checked before forgetting it: kept for the next sweep');
        kept.push(held.id);
        continue;
      }
      if (decided === 'kept') kept.push(held.id);
      else if (decided === 'claimed') claimed++;
      else forgotten += await this.fulfillments.forgetUnowned([held.id]);
    }
    // Kept ones go behind those not tried since: a supplier that never answers cannot hold back the newer ones.
    await this.fulfillments.markKept(kept, new Date());
    return { claimed, forgotten };
  }

  /** What becomes of a held fulfillment no job can own any more, once checked against its store's jobs ended unplaced (`forgetUnowned`). */
  private async beforeForgetting(held: HeldRow): Promise<'claimed' | 'kept' | 'forget'> {
    // Held for a record since deleted: read through the record of the same supplier that replaced it,
    // which answers for its former records' jobs (`UnplacedShipments.ownerOf`); none, nothing can read it.
    const store = (await this.deps.sourceStores.findActive(held.sourceStoreId)) ?? (await this.deps.sourceStores.activeRecordReplacing(held.sourceStoreId));
    if (!store) return 'forget';
    const foundBy = held.watchPassId ? { by: 'divergence_watch' as const, watchPassId: held.watchPassId } : { by: 'fulfillment_webhook' as const };
    let owned;
    try {
      owned = await this.unplaced.ownerOf([store], held.sourceOrderId, held.receivedAt, foundBy);
    } catch (error) {
      if (!(error instanceof PlatformError)) throw error;
      if (Date.now() - held.receivedAt.getTime() < HELD_READ_GIVE_UP_MS) {
        this.deps.logger.warn({ source_store_id: store.id, source_order_id: held.sourceOrderId, err: error.message }, 'supplier order of a held fulfillment could not be read: kept for the next sweep');
        return 'kept';
      }
      owned = { job: null, unreadable: new Map([[store.id, `reading the order kept failing for 7 days, last ${error.status ?? 'with no answer'}: ${error.message.slice(0, 200)}`]]) };
    }
    if (owned.job) {
      const { created } = held.watchPassId
        ? await this.receiveReconciled(owned.job, held.tracking, held.keys, held.watchPassId, held.id)
        : await this.receive(owned.job, held.tracking, held.keys, held.id);
      this.deps.logger.info({ job_id: owned.job.id, source_order_id: held.sourceOrderId, created }, 'held fulfillment claimed by the job ended unplaced its order names');
      return created ? 'claimed' : 'forget';
    }
    await this.unplaced.reportUnattributed([store], { sourceOrderId: held.sourceOrderId, trackingNumbers: held.tracking.numbers, receivedAt: held.receivedAt }, owned.unreadable);
    return 'forget';
  }

  /** Why the tracking must not be sent, if it must not: a reseller platform that needs a number gets none. */
  private async skipReasonFor(job: SyncJob, tracking: Tracking): Promise<string | null> {
    if (tracking.numbers.length > 0) return null;
    const reseller = await this.resellerStores.findById(job.resellerStoreId);
    if (!reseller || !this.deps.platforms[reseller.platform].needsTrackingNumber) return null;
    return `no tracking number: ${reseller.platform} needs one to add a fulfillment to the order`;
  }

  /**
   * POST /v1/sync_jobs/{id}/fulfillments/{fulfillment_id}/retry: a failed or dead fulfillment is
   * pushed again, as a job retry does (a fresh queue message makes any older one stale); its
   * completion resolves the job's `fulfillment_dead` entry (the kind's settled steps).
   */
  async retry(principal: Principal, syncJobId: string, fulfillmentId: string): Promise<void> {
    await retryByHand(this.deps, fulfillmentKind, {
      find: () => this.fulfillments.findOwned(principal.userId, syncJobId, fulfillmentId),
      audit: (fulfillment) => ({ ...fulfillmentAuditRecord(fulfillment, 'fulfillment.retried', { attempts: fulfillment.attempts, ...auditContext(principal) }), actorId: actorOf(principal) }),
      repository: this.fulfillments,
      written: async () => undefined,
      names: { many: 'fulfillments', one: 'fulfillment' },
    });
  }
}
