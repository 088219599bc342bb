import type { AttemptTimelines, CancelledJobs, DivergenceRaising, SupplierFormerRecords, SupplierTerms, SupplierVendorTags } from './ports.ts';
import type { PricingConfig } from '../../contract/pricing.ts';
import type { SupplierLine } from '../platforms/types.ts';
import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import { insertAudit, insertAuditOnce, SYSTEM_ACTOR, type AuditRecord } from '../audit-log/repository.ts';
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/index.ts';
import { linePosition, type CancelledBefore } from '../orders/types.ts';
import type { CancellationVia, CancelledOrderLine, OrderAtRouting, OrderCancellations, OrderCancelled, OrderRef, OrderStore, StorefrontCancellation } from '../orders/port.ts';
import type { Trx } from '../db/sql.ts';
import type { Outbox } from '../events/outbox.ts';
import type { NewEvent } from '../events/types.ts';
import { CUT_BEFORE_PLACEMENT, cutOrder } from './cut.ts';
import { foundOrderSignalKey, isFoundOrderSignal, isListedSignal, isWatchSignal, listedSignalKey, shownSignalKey } from './signal-keys.ts';
import { heldBySnapshot, heldByRead, unaccountedLines } from './listed.ts';
import { supplierSku, vendorMatches } from '../pricing/index.ts';
import { newMessageId, type Queue } from '../queue/queue.ts';
import { GroupCommit } from '../db/group-commit.ts';
import { holdLock } from '../db/locks.ts';
import { notFound } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { storableText } from '../shared/text.ts';
import { withFormerRecords } from '../source-stores/former-records.ts';
import { MAX_REASON_LENGTH } from '../platforms/cancel-webhooks.ts';
import type { SupplierCancelled, SyncJob } from '../sync-jobs/entity.ts';
import { placedJobLockKey } from '../sync-jobs/placed-lock.ts';
import type { JobDetail } from '../sync-jobs/present.ts';
import { voidJobsIn } from './attempt.ts';
import { cancellationAuditRecord } from './audit.ts';
import type { Cancellation, CancelledLine, OrderCancellation } from './entity.ts';
import { cancellationsOfJob, jobEventIn, jobEventsIn } from './events.ts';
import { orderLockKeys, type CancellationRepository, type HeldCancellationRow, type HeldSupplierCancellationRepository } from './repository.ts';
import { cancellationStats, type CancellationStats } from './stats.ts';
import { cancellationKind } from './kind.ts';
import { cancelledWhole, shippedAnywayIn, shippedAnywayReason } from './too-late.ts';
import { retryByHand } from '../attempts/manual-retry.ts';
import type { CancellationView } from './present.ts';

/**
 * A storefront cancellation to act on (src/orders/port.ts `OrderCancelling.cancel`: its webhook, or
 * the divergence watch finding the order cancelled), with its order's store.
 */
interface CancellationSignal extends StorefrontCancellation {
  ownerId: string;
  resellerStoreId: string;
  via: CancellationVia;
}

/**
 * A supplier's cancellation of an order the service placed (`recordSupplierCancellation`: its
 * webhook, or the divergence watch finding the supplier order cancelled).
 */
export interface SupplierCancellationReport {
  /** The source store records that may hold the order (several records can share a supplier's domain). */
  sourceStoreIds: string[];
  /** The supplier's order id, as the job recorded it (`sourceOrderId`), or as the supplier lists it. */
  sourceOrderId: string;
  /**
   * The job, when the caller found it already: the divergence watch finds it by the order's id, or,
   * for an order whose creation answer was lost, by the reference the order carries (the job has no
   * `sourceOrderId` then, and could not be found by the order's id).
   */
  syncJob?: SyncJob;
  /** The supplier's reason, when it gives one (`supplierCancelReason`). */
  reason: string | null;
  /** When the supplier cancelled; now when unknown. */
  at?: Date;
  /** The lines the supplier says it cancelled, when it names them (a custom supplier); else the whole order. */
  lines?: CancelledLine[] | undefined;
  /** Recorded in the audit entry: `{ source: 'webhook', topic, webhookId }` or `{ source: 'watch', … }`. */
  via: Record<string, unknown>;
  /**
   * The source store records that sent it (its webhook): when no job has recorded the order but one
   * of theirs is in doubt (its create answer lost), it is held for them until that job learns the
   * order (`claimHeld`), as a shipment is. The watch, which finds the job itself, gives none.
   */
  senders?: SupplierCancellationSender[];
  /**
   * The lines are what the supplier shows cancelled beyond what the service asked of the job (the
   * watch worked that out: `recordShownSupplierLines`), so they are not compared with its asks again.
   */
  beyondAsked?: boolean;
}

/** A source store record a supplier's cancellation webhook came from, as a held cancellation names it. */
export interface SupplierCancellationSender {
  id: string;
  ownerId: string;
  resellerStoreId: string;
}

/** Held supplier cancellations recorded on their job per sweep. */
const HELD_CLAIMS_PER_PASS = 200;

/** The job a supplier cancellation was for, and whether this call recorded it (false: known already, or the service's own). */
export interface SupplierCancellationRecorded {
  syncJobId: string;
  recorded: boolean;
}

/** A supplier's own cancellation, recorded on the job that placed the order (the webhook and the divergence watch call it). */
export interface SupplierCancellations {
  recordSupplierCancellation(report: SupplierCancellationReport): Promise<SupplierCancellationRecorded | null>;
}

/** The audit entries and events applying signals leaves to write (`record`), one statement each. */
interface Writes {
  audit: AuditRecord[];
  events: NewEvent[];
}

/** What applying a signal did: the jobs it reached, and what it leaves to write. */
interface Applied extends Writes {
  jobs: SyncJob[];
}

const NOTHING_APPLIED: Applied = { jobs: [], audit: [], events: [] };

/** The ids of the jobs that have a cancellation from this signal among these cancellations. */
const reachedBy = (signal: OrderCancellation, cancellations: Cancellation[]) => new Set(cancellations.filter((c) => c.signalId === signal.id).map((c) => c.syncJobId));

/** What a signal asks of one job: the supplier lines to cancel, and whether that is all of them. */
interface JobPlan {
  job: SyncJob;
  /** The job's supplier's vendor tag (null once the supplier is gone): its lines are the job's part of the order. */
  vendorTag: string | null;
  scope: 'order' | 'lines';
  lines: CancelledLine[];
}

const SHIPPED_AFTER_CANCELLATION = shippedAnywayReason('a fulfillment arrived after the cancellation');
/** Cancelling or cancelled: these quantities are no longer open to a new cancellation. */
const holdsQuantity = (c: Cancellation) => c.outcome !== 'too_late' && c.outcome !== 'unsupported';
/** Its lines were cut from the job's stored order before any placement: the supplier never had them. */
const isCut = (c: Cancellation) => c.reason === CUT_BEFORE_PLACEMENT;

/**
 * Cancellations (order-changes.md): the storefront's cancellation of an order or of some of its
 * lines becomes one cancellation per affected sync job (retried work, src/cancellations/attempt.ts);
 * a supplier's own cancellation is recorded on its job. Every signal is recorded (so an order
 * routed later is routed as cancelled) and applied under a per-order lock, so concurrent signals
 * and the routing of the order never cancel a quantity twice.
 */
/**
 * The supplier order found by its reference for a job ended unplaced (VOID), and who found it: a
 * divergence-watch pass, or a cancellation's lookup (`recordFoundOrderOfVoided`).
 */
export type VoidedOrderFound = { sourceOrderId: string } & ({ watchPassId: string } | { foundByCancellationId: string });

/** A shipment of an order no job recorded, which the service could not attribute (`shipmentUnattributed`). */
export interface UnattributedShipment {
  sourceStoreId: string;
  sourceOrderId: string;
  trackingNumbers: string[];
  /** Why it could not be attributed, for the audit entry and the to-do entry's detail. */
  why: string;
}

export class CancellationService implements OrderCancellations, SupplierCancellations {
  constructor(
    private readonly deps: {
      jobs: CancelledJobs;
      vendorTags: SupplierVendorTags;
      queue: Queue;
      outbox: Outbox;
      metrics: Metrics;
      timelines: AttemptTimelines;
      /** Supplier cancellations kept for jobs in doubt (`recordSupplierCancellation`, `claimHeld`). */
      held: HeldSupplierCancellationRepository;
      /** The senders' former records, whose jobs in doubt a cancellation is held for too. */
      formerRecords: SupplierFormerRecords;
      logger: Logger;
    },
    private readonly repository: CancellationRepository,
    private readonly divergences: DivergenceRaising,
  ) {}

  /**
   * Signals arriving while intake transactions are in flight are applied together in the next (group
   * commit, src/db/group-commit.ts, as the routing of orders): a transaction and its lock, audit and
   * events statements per group rather than per webhook.
   */
  private readonly intake = new GroupCommit((signals: CancellationSignal[]) => this.applySignals(signals), { maxItems: 32, maxInFlight: 4 });

  /**
   * A storefront cancellation, reached through the order module (src/orders/port.ts
   * `OrderCancelling.cancel`). One transaction: the order's cancellation lock first, then the signal
   * recorded and the order's jobs read. The routing of an order inserts its jobs before it takes that
   * lock and reads the signals after (`applyAtRouting`); under READ COMMITTED each statement sees what
   * committed before it, so whichever of the two takes the lock second sees the other's rows, and both
   * applying is harmless (one cancellation per signal and job, computed under the lock).
   */
  cancelOrder(store: OrderStore, cancellation: StorefrontCancellation, via: CancellationVia): Promise<OrderCancelled> {
    return this.intake.submit({ ...cancellation, ownerId: store.ownerId, resellerStoreId: store.id, via });
  }

  /**
   * A group of signals in one transaction: every order's lock first (in key order, as routing takes
   * them, so two groups never wait on each other's), then each signal recorded and applied in turn
   * (a later one sees what an earlier one did), then the audit entries and events of all. A signal
   * delivered twice within the group answers the second time as the first, recording nothing more.
   */
  private applySignals(signals: CancellationSignal[]): Promise<OrderCancelled[]> {
    return this.repository.transaction(async (trx) => {
      await this.repository.lockOrders(trx, signals);
      const writes: Writes = { audit: [], events: [] };
      const answered = new Map<string, OrderCancelled>();
      const answers: OrderCancelled[] = [];
      for (const signal of signals) {
        const key = `${signal.resellerStoreId}\n${signal.dedupeKey}`;
        const earlier = answered.get(key);
        const answer = earlier ? { ...earlier, recorded: false } : await this.applySignalIn(trx, signal, writes);
        if (!earlier) answered.set(key, answer);
        answers.push(answer);
      }
      await this.record(trx, writes);
      return answers;
    });
  }

  /** Records and applies one signal under its order's lock; its audit entries and events are added to `writes`. */
  private async applySignalIn(trx: Trx, signal: CancellationSignal, writes: Writes): Promise<OrderCancelled> {
    const record: OrderCancellation = {
      id: newId('orderCancellation'),
      ownerId: signal.ownerId,
      resellerStoreId: signal.resellerStoreId,
      externalOrderId: signal.externalOrderId,
      scope: signal.scope,
      lines: signal.lines,
      dedupeKey: signal.dedupeKey,
      receivedAt: new Date(),
      occurredAt: signal.occurredAt ?? null,
    };
    // A whole-order signal reads the order's signals first (under its lock, so they stay as read); one of some lines only on a redelivery.
    const kept = signal.scope === 'order' ? await this.repository.signalsOf(trx, signal.resellerStoreId, signal.externalOrderId) : null;
    const sameAs = kept && (await this.sameCancellationApplied(trx, signal, kept, writes));
    if (sameAs) {
      // The divergence watch stands in for a lost webhook: it and the order's webhook, in either
      // order, are one cancellation (order-changes.md: a late webhook is de-duplicated), so the second
      // is kept (no audit entry, no event: a later webhook is then a delivery of its own) and answers
      // as a redelivery of the first would.
      await this.repository.insertSignal(trx, record);
      const jobs = await this.deps.jobs.ofOrderIn(trx, signal.resellerStoreId, signal.externalOrderId);
      return { recorded: false, routed: jobs.length > 0, syncJobIds: await this.jobsReachedBy(trx, sameAs, jobs) };
    }
    const inserted = await this.repository.insertSignal(trx, record);
    const stored = inserted ? record : (kept ?? (await this.repository.signalsOf(trx, signal.resellerStoreId, signal.externalOrderId))).find((s) => s.dedupeKey === signal.dedupeKey);
    if (!stored) return { recorded: false, routed: false, syncJobIds: [] };
    const jobs = await this.deps.jobs.ofOrderIn(trx, signal.resellerStoreId, signal.externalOrderId);
    const routed = jobs.length > 0;
    if (!inserted && (await this.repository.signalAudited(trx, stored))) {
      // A redelivery of a signal applied before changes nothing (it is not planned again: what a
      // cancellation ended since may have freed quantities), and answers the jobs it has reached.
      return { recorded: false, routed, syncJobIds: await this.jobsReachedBy(trx, stored, jobs) };
    }
    // A new signal, or one recorded by a version that committed signals apart and stopped before applying it.
    // Lines the storefront order showed cancelled when it was routed already hold a partial cancellation made before (src/cancellations/listed.ts).
    const heldBy = stored.scope === 'lines' ? heldBySnapshot(await this.repository.signalsOf(trx, signal.resellerStoreId, signal.externalOrderId)).get(stored.id) : undefined;
    const applied = routed && !heldBy ? await this.apply(trx, stored, jobs) : NOTHING_APPLIED;
    const syncJobIds = applied.jobs.map((job) => job.id);
    writes.audit.push(...applied.audit, orderAudit(signal, { routed, syncJobIds, signalId: stored.id, ...(heldBy && { heldBySignalId: heldBy.id }) }));
    writes.events.push(...applied.events, orderCancelledEvent(signal, signal.ownerId, syncJobIds));
    return { recorded: inserted !== null, routed, syncJobIds };
  }

  /**
   * For a whole-order signal of the divergence watch: the order's (`kept`) whole-order signal of a webhook,
   * applied before. For one of a webhook: the watch's, applied before, unless another webhook's
   * whole-order signal is kept (the watch stands in for one webhook; two webhook ids are two
   * signals, each audited). Applied: audited, or earlier in this group (its audit entry is still in
   * `writes`).
   */
  private async sameCancellationApplied(trx: Trx, signal: CancellationSignal, kept: OrderCancellation[], writes: Writes): Promise<OrderCancellation | undefined> {
    const watch = isWatchSignal(signal.dedupeKey);
    // A job's cancellation asked again once its order was found (`cancelFoundOrder`) is no delivery of the storefront's.
    const others = kept.filter((stored) => stored.scope === 'order' && stored.dedupeKey !== signal.dedupeKey && !isFoundOrderSignal(stored.dedupeKey));
    if (!watch && others.some((stored) => !isWatchSignal(stored.dedupeKey))) return undefined;
    for (const stored of others.filter((other) => isWatchSignal(other.dedupeKey) !== watch)) {
      const inThisGroup = writes.audit.some((entry) => entry.action === 'order.cancelled' && entry.metadata?.signalId === stored.id);
      if (inThisGroup || (await this.repository.signalAudited(trx, stored))) return stored;
    }
    return undefined;
  }

  /** The keys of these orders' cancellation locks, for the routing's job insert to take them (see `applyAtRouting`). */
  lockKeysOf(orders: OrderRef[]): string[] {
    return orderLockKeys(orders);
  }

  /**
   * Inside the routing transaction of these orders, once their jobs are inserted: under each order's
   * cancellation lock (taken for every order, in a fixed order, so a cancellation received while the
   * order is being routed is either seen here or sees the jobs once they are committed), the
   * cancellations recorded before are applied to the new jobs, so a job of an order cancelled first
   * ends at once (`not_placed`, never placed) or is placed without its cancelled lines. The routing's
   * job insert took the locks (`lockKeysOf`); one read when no order of the group was cancelled.
   */
  async applyAtRouting(trx: Trx, orders: OrderAtRouting[]): Promise<void> {
    if (orders.length === 0) return;
    const listed = await this.recordListed(trx, orders);
    const signals = await this.repository.signalsOfOrders(trx, orders);
    // A partial cancellation made before the order routing read is among the lines it listed cancelled: applied once, by the listed signal.
    const held = heldBySnapshot(signals);
    // A signal of `cancelFoundOrder` is for its one job; the storefront's own signal reaches the new ones.
    for (const signal of signals.filter((s) => !isFoundOrderSignal(s.dedupeKey))) {
      if (held.has(signal.id)) continue;
      const jobs = await this.deps.jobs.ofOrderIn(trx, signal.resellerStoreId, signal.externalOrderId);
      if (jobs.length === 0) continue;
      const applied = await this.apply(trx, signal, jobs);
      const order = listed.get(signal.id);
      if (order) {
        // Its own order.cancelled, as a signal received gets: the storefront's, found on the order routed.
        const syncJobIds = applied.jobs.map((job) => job.id);
        const via = { source: 'storefront_order', asOf: signal.occurredAt };
        applied.audit.push(orderAudit({ ...signal, ownerId: order.ownerId, via }, { routed: true, syncJobIds, signalId: signal.id }));
        applied.events.push(orderCancelledEvent(signal, order.ownerId, syncJobIds));
      }
      await this.record(trx, applied);
    }
  }

  /**
   * The lines each of these orders showed cancelled when routing read it (`cancelledBefore`), recorded
   * as the order's `listed:` signal (once: an order is routed once). Returns the signals recorded, by id.
   */
  private async recordListed(trx: Trx, orders: OrderAtRouting[]): Promise<Map<string, OrderAtRouting>> {
    const recorded = new Map<string, OrderAtRouting>();
    for (const order of orders) {
      if (!order.cancelledBefore || order.cancelledBefore.lines.length === 0) continue;
      const signal: OrderCancellation = {
        id: newId('orderCancellation'),
        ownerId: order.ownerId,
        resellerStoreId: order.resellerStoreId,
        externalOrderId: order.externalOrderId,
        scope: 'lines',
        lines: order.cancelledBefore.lines.map(({ sku, vendor, quantity }) => ({ sku, quantity, vendor })),
        dedupeKey: listedSignalKey(order.externalOrderId),
        receivedAt: new Date(),
        occurredAt: order.cancelledBefore.asOf,
      };
      if (await this.repository.insertSignal(trx, signal)) recorded.set(signal.id, order);
    }
    return recorded;
  }

  /** The ids of these jobs that have a cancellation from this signal, in the jobs' order. */
  private async jobsReachedBy(trx: Trx, signal: OrderCancellation, jobs: SyncJob[]): Promise<string[]> {
    const reached = reachedBy(signal, await this.repository.forJobsIn(trx, jobs.map((job) => job.id)));
    return jobs.filter((job) => reached.has(job.id)).map((job) => job.id);
  }

  /** Writes what applying a signal leaves to its caller: its audit entries in one statement, its events in another. */
  private async record(trx: Trx, writes: Writes): Promise<void> {
    await insertAudit(trx, writes.audit);
    await this.deps.outbox.append(trx, writes.events);
  }

  /**
   * Creates this signal's cancellations for the jobs it still finds something open on (none for a job
   * that already has one from this signal), under the order's lock. A job never placed ends at once:
   * wholly cancelled, it is completed without an order (VOID); cut by some lines, it is placed without
   * them. Returns the jobs the signal reached (a cancellation each: new, or from an earlier
   * application, so a redelivery answers as its first delivery did), with the audit entries and
   * events for the caller to write (`record`) beside its own. With `plannable`, only those jobs may get
   * a new cancellation; the others count for what the signal took of them before.
   */
  private async apply(trx: Trx, signal: OrderCancellation, jobs: SyncJob[], plannable?: ReadonlySet<string>): Promise<Applied> {
    const existing = await this.repository.forJobsIn(trx, jobs.map((job) => job.id));
    const terms = await this.supplierTerms(trx, jobs);
    const reachedBefore = reachedBy(signal, existing);
    // A manual job placed what its read of the storefront order showed open: the order's signals that read counts are not its to apply.
    const orderSignals =
      signal.scope === 'lines' && (jobs.some((job) => readOf(job)) || isListedSignal(signal.dedupeKey)) ? await this.repository.signalsOf(trx, signal.resellerStoreId, signal.externalOrderId) : [];
    const candidates = jobs.map((job) => {
      const vendorTag = terms.get(job.sourceStoreId)?.vendorTag ?? null;
      const ofJob = existing.filter((c) => c.syncJobId === job.id);
      const heldByRead = heldByJobRead(job, vendorTag, orderSignals).has(signal.id);
      const planned = !reachedBefore.has(job.id) && !heldByRead && (plannable?.has(job.id) ?? true);
      // Lines naming no vendor that this job already took (reached before), or that its read counted (held).
      const spent = reachedBefore.has(job.id)
        ? unnamedSpentBy(signal, vendorTag, ofJob.filter((c) => c.signalId === signal.id))
        : heldByRead
          ? signal.lines.filter((line) => line.vendor === undefined && skusOfRead(job, vendorTag).has(line.sku))
          : [];
      // A manual job whose read came after the signal placed what the signal left open, whichever line of the SKU it took: no share of its lines naming no vendor.
      const readAfter = readCovers(job, signal);
      return { job, vendorTag, existing: ofJob, planned, spent, open: planned && !readAfter ? openLinesOf(job, vendorTag, ofJob) : null };
    });
    // A SKU sold by two of the order's suppliers, cancelled by a line naming no vendor, is cancelled once.
    const unnamed = unnamedShares(signal, candidates);
    const plans = candidates.flatMap(({ job, vendorTag, existing: ofJob, planned }) => {
      if (!planned) return [];
      const plan = planFor(job, vendorTag, ofJob, listedBeyondRead(signal, job, vendorTag, ofJob, orderSignals), unnamed.get(job.id));
      return plan ? [plan] : [];
    });
    const reached = new Set([...reachedBefore, ...plans.map((plan) => plan.job.id)]);
    const reachedJobs = jobs.filter((job) => reached.has(job.id));
    if (plans.length === 0) return { ...NOTHING_APPLIED, jobs: reachedJobs };
    const now = new Date();
    const rows: Cancellation[] = [];
    const settled: Cancellation[] = [];
    const unplaced = (job: SyncJob) => job.status === 'pending' || job.status === 'failed' || job.status === 'dead';
    for (const plan of plans) {
      const row = newCancellation(signal, plan, now, terms.get(plan.job.sourceStoreId)?.pricingConfig ?? null);
      if (plan.scope === 'lines' && unplaced(plan.job) && plan.job.order && plan.job.attempts === 0 && (await this.cut(trx, plan))) {
        // Placed without those lines: nothing reaches the supplier, so the outcome is known now.
        Object.assign(row, { status: 'completed', outcome: 'not_placed', completedAt: now, queueMessageId: null, reason: CUT_BEFORE_PLACEMENT });
        settled.push(row);
      }
      rows.push(row);
    }
    await this.repository.insert(trx, rows);
    // After the cancellations, so the voided jobs' sync_job.completed shows the one that voided them.
    const voiding = plans.filter((plan) => plan.scope === 'order' && unplaced(plan.job)).map((plan) => plan.job);
    await voidJobsIn({ cancelledJobs: this.deps.jobs, outbox: this.deps.outbox }, trx, voiding, now);
    const queued = rows.filter((row) => row.queueMessageId);
    await this.deps.queue.insertIn(trx, cancellationKind.queue, queued.map((row) => ({ id: row.queueMessageId!, message: cancellationKind.message(row.id) })));
    for (const row of queued) this.deps.metrics.attemptTransitions.inc({ kind: 'cancellation', status: 'pending' });
    return {
      jobs: reachedJobs,
      audit: [
        ...rows.map((row) => cancellationAuditRecord(row, 'cancellation.requested', SYSTEM_ACTOR, { signalId: signal.id })),
        ...settled.map((row) => cancellationAuditRecord(row, 'cancellation.completed', SYSTEM_ACTOR, { outcome: row.outcome, attempts: 0 })),
      ],
      events: await jobEventsIn(trx, settled.map((row) => ({ type: 'cancellation.completed' as const, syncJobId: row.syncJobId }))),
    };
  }

  /**
   * In the transaction recording the placement of these manual jobs (POST /v1/sync_jobs), once each
   * stores the order its attempt read and placed (src/sync-jobs/attempt.ts): under their orders'
   * cancellation locks, the storefront's cancellations of some lines that reached them while they had
   * no order to cut (received before or during their placement) are applied as they are to any job
   * placed, the supplier asked to cancel those quantities, unless the order the attempt read showed
   * them cancelled already (placed without them: `heldByRead`). A whole-order cancellation reached the
   * job when it arrived (planFor). A signal received after this transaction applies as usual: whichever
   * of the two takes the order's lock second sees the other's rows.
   */
  async applyToPlacedIn(trx: Trx, placed: { id: string; resellerStoreId: string; externalOrderId: string }[]): Promise<void> {
    if (placed.length === 0) return;
    await this.repository.lockOrders(trx, placed);
    const ids = new Set(placed.map((job) => job.id));
    const signals = await this.repository.signalsOfOrders(trx, placed);
    const held = heldBySnapshot(signals);
    for (const signal of signals.filter((s) => s.scope === 'lines' && !held.has(s.id))) {
      // Every job of the order is read (what the signal's lines naming no vendor took of the others is spent), only the ones placed now planned.
      const jobs = await this.deps.jobs.ofOrderIn(trx, signal.resellerStoreId, signal.externalOrderId);
      if (!jobs.some((job) => ids.has(job.id))) continue;
      await this.record(trx, await this.apply(trx, signal, jobs, ids));
    }
  }

  /**
   * A divergence-watch pass listed, still open (not shipped, not cancelled), the supplier order whose
   * reference names a job ended unplaced by its whole-order cancellation, whose lookup by reference
   * missed it (`not_placed`: a supplier list that did not show it, or a lookup stopped at its page
   * bound). Nothing else would cancel that order, and the supplier would ship what the customer
   * cancelled. In one transaction, under the order's cancellation lock: the order is recorded on the
   * job (audit `sync_job.order_found`, `foundBy` the watch and its pass), and the job, open again, gets
   * a new whole-order cancellation of the lines the storefront's asked for, queued as any other (retries,
   * outcome `cancelled` or `too_late`, events, audit `cancellation.requested` naming the pass and the
   * cancellation it follows). Its signal (`foundOrderSignalKey`, one per job) stands for the storefront's.
   * Nothing is written unless the job's last whole-order cancellation ended `not_placed`, none is
   * still being made, and the order is recorded now; returns whether the cancellation was asked for.
   */
  async cancelFoundOrder(job: SyncJob, found: { sourceOrderId: string; watchPassId: string }): Promise<boolean> {
    const created = await this.repository.transaction(async (trx) => {
      await this.repository.lockOrders(trx, [{ resellerStoreId: job.resellerStoreId, externalOrderId: job.externalOrderId }]);
      const existing = await this.repository.forJobsIn(trx, [job.id]);
      const missed = existing.filter((c) => c.scope === 'order').at(-1);
      if (!missed || missed.status !== 'completed' || missed.outcome !== 'not_placed' || existing.some((c) => c.status !== 'completed')) return false;
      if (!(await this.deps.jobs.recordFoundOrderIn(trx, job.id, found.sourceOrderId, { by: 'divergence_watch', watchPassId: found.watchPassId }))) return false;
      return this.askWholeOrderAgainIn(trx, job, missed, found.sourceOrderId, {
        reason: 'the supplier order the cancellation did not find was listed open by the divergence watch',
        watchPassId: found.watchPassId,
      });
    });
    if (created) this.deps.metrics.attemptTransitions.inc({ kind: 'cancellation', status: 'pending' });
    return created;
  }

  /**
   * The job's new whole-order cancellation of the order found since `missed`, its whole-order
   * cancellation, ended `not_placed`: of the lines the storefront's asked for, queued as any other,
   * audit `cancellation.requested` by `system` naming the order, `follows` and who found it (`by`).
   * Its signal (`foundOrderSignalKey`, one per job) stands for the storefront's; false when the job
   * has one already (asked again before).
   */
  private async askWholeOrderAgainIn(trx: Trx, job: SyncJob, missed: Cancellation, sourceOrderId: string, by: Record<string, unknown>): Promise<boolean> {
    const now = new Date();
    const signal: OrderCancellation = {
      id: newId('orderCancellation'),
      ownerId: job.ownerId,
      resellerStoreId: job.resellerStoreId,
      externalOrderId: job.externalOrderId,
      scope: 'order',
      lines: [],
      dedupeKey: foundOrderSignalKey(job.id),
      receivedAt: now,
      // No platform time: it asks again for the storefront's own cancellation, for this job.
      occurredAt: null,
    };
    if (!(await this.repository.insertSignal(trx, signal))) return false;
    const row = newCancellation(signal, { job, vendorTag: null, scope: 'order', lines: missed.lines }, now);
    await this.repository.insert(trx, [row]);
    await this.deps.queue.insertIn(trx, cancellationKind.queue, [{ id: row.queueMessageId!, message: cancellationKind.message(row.id) }]);
    await insertAudit(trx, [cancellationAuditRecord(row, 'cancellation.requested', SYSTEM_ACTOR, { signalId: signal.id, follows: missed.id, sourceOrderId, ...by })]);
    return true;
  }

  /**
   * The supplier order whose reference names `job`, a job ended unplaced (VOID) while its placement
   * was in doubt, found by a divergence-watch pass that listed it, or by the lookup by reference of
   * another cancellation of the job (one of some lines, say, retried by hand, while the whole-order
   * one had died): its whole-order cancellation has not found that order (still looking, or dead: the
   * lookup stopped at its bound, or failed, at every retry). In one transaction, under the order's
   * cancellation lock, the order is recorded on the job (audit `sync_job.order_found`, `foundBy` the
   * watch and its pass, or the cancellation). When the job's last whole-order cancellation is dead,
   * nothing else would cancel that order (a retry by hand would, but its `cancellation_dead` entry
   * says nothing of the order found), and the supplier would ship what the customer cancelled: it is
   * re-opened for fresh automatic retries, as a retry by hand would (the machine's RETRY: three
   * retries again, a new queue message), by the service: audit and event `cancellation.retried`
   * (actor `system`, naming the order and the pass or the cancellation that found it); its retry now
   * cancels the order it knows (`cancelled`, or `too_late` if shipped), which resolves the entry.
   * When it ended `not_placed` (its lookup missed the order, which another cancellation's lookup, or
   * a pass, finds since), the whole order is asked again, as `cancelFoundOrder` does. A cancellation
   * still retrying finds the order recorded at its next attempt. Returns whether the order was
   * recorded now, and whether a whole-order cancellation was set going again (`reopened`: re-opened,
   * or asked again).
   */
  async recordFoundOrderOfVoided(job: SyncJob, found: VoidedOrderFound): Promise<{ recorded: boolean; reopened: boolean }> {
    const byWatch = 'watchPassId' in found;
    const foundBy = byWatch ? { by: 'divergence_watch' as const, watchPassId: found.watchPassId } : { by: 'cancellation' as const };
    const result = await this.repository.transaction(async (trx) => {
      await this.repository.lockOrders(trx, [{ resellerStoreId: job.resellerStoreId, externalOrderId: job.externalOrderId }]);
      if (!(await this.deps.jobs.recordFoundOrderIn(trx, job.id, found.sourceOrderId, foundBy))) return { recorded: false, reopened: false };
      const last = (await this.repository.forJobsIn(trx, [job.id])).filter((c) => c.scope === 'order').at(-1);
      // Ended not_placed (its lookup missed the order): nothing would cancel it; the whole order is asked again.
      if (last?.status === 'completed' && last.outcome === 'not_placed') {
        const reason = byWatch ? 'the supplier order the cancellation did not find was found by the divergence watch' : "the supplier order the cancellation did not find was found by another cancellation's lookup";
        const by = byWatch ? { reason, watchPassId: found.watchPassId } : { reason, foundByCancellationId: found.foundByCancellationId };
        return { recorded: true, reopened: await this.askWholeOrderAgainIn(trx, job, last, found.sourceOrderId, by) };
      }
      if (!last || last.status !== 'dead') return { recorded: true, reopened: false };
      const now = new Date();
      if (!cancellationKind.transition(last, { type: 'RETRY', at: now.toISOString() }, now)) return { recorded: true, reopened: false };
      last.queueMessageId = newMessageId();
      const audit = cancellationAuditRecord(last, 'cancellation.retried', SYSTEM_ACTOR, {
        attempts: last.attempts,
        sourceOrderId: found.sourceOrderId,
        ...(byWatch
          ? { watchPassId: found.watchPassId, reason: 'the supplier order the dead cancellation could not find was found by the divergence watch: retried to cancel it' }
          : {
              foundByCancellationId: found.foundByCancellationId,
              reason: "the supplier order the dead cancellation could not find was found by another cancellation's lookup: retried to cancel it",
            }),
      });
      const [written] = await this.repository.writeTransitions(trx, [{ row: last, result: cancellationKind.resultOf(last), audit }]);
      // Moved meanwhile (retried by hand): that retry finds the order recorded.
      if (!written) return { recorded: true, reopened: false };
      await this.deps.queue.insertIn(trx, cancellationKind.queue, [{ id: last.queueMessageId, message: cancellationKind.message(last.id) }]);
      const event = await jobEventIn(trx, 'cancellation.retried', job.id);
      if (event) await this.deps.outbox.append(trx, [event]);
      return { recorded: true, reopened: true };
    });
    if (result.reopened) this.deps.metrics.attemptTransitions.inc({ kind: 'cancellation', status: 'pending' });
    return result;
  }

  /**
   * A divergence-watch pass listed a routed storefront order, not cancelled whole, that shows some of
   * its lines cancelled (`shown`: custom `cancelledQuantity`, platform_a refund-cancelled quantities,
   * as of the order's time). In one transaction under the order's cancellation lock, what it shows
   * beyond what the order's signals account for (src/cancellations/listed.ts `unaccountedLines`: a
   * partial cancellation whose webhook was lost) is recorded as one more signal of the order
   * (`shownSignalKey`: one per quantities shown, occurred at the order's time) and applied as its
   * webhook would be: a lines cancellation per affected job, queued retried work (or a cut before
   * placement), audit and event `order.cancelled` with `source: "watch"` and the pass. A later pass
   * that lists the order again finds nothing missing; the lost webhook, arriving late after all, is
   * held by this signal (made no later than the order listed, or of quantities that fit) and cancels
   * nothing more. Returns whether a cancellation was asked for (a repair).
   */
  async cancelShownLines(store: OrderStore, shown: { externalOrderId: string; cancelled: CancelledBefore }, watchPassId: string): Promise<boolean> {
    const answer = await this.repository.transaction(async (trx) => {
      await this.repository.lockOrders(trx, [{ resellerStoreId: store.id, externalOrderId: shown.externalOrderId }]);
      const signals = await this.repository.signalsOf(trx, store.id, shown.externalOrderId);
      const jobs = await this.deps.jobs.ofOrderIn(trx, store.id, shown.externalOrderId);
      const missing = unaccountedLines(withManualReads(signals, jobs, jobs.some((job) => readOf(job)) ? await this.vendorTags(trx, jobs) : new Map()), shown.cancelled.lines);
      if (missing.length === 0) return null;
      const writes: Writes = { audit: [], events: [] };
      const signal: CancellationSignal = {
        externalOrderId: shown.externalOrderId,
        scope: 'lines',
        lines: missing.map(({ sku, vendor, quantity }) => ({ sku, quantity, vendor })),
        dedupeKey: shownSignalKey(shown.externalOrderId, shown.cancelled.lines),
        occurredAt: shown.cancelled.asOf,
        ownerId: store.ownerId,
        resellerStoreId: store.id,
        via: { source: 'watch', watchPassId, asOf: shown.cancelled.asOf, shown: shown.cancelled.lines },
      };
      const applied = await this.applySignalIn(trx, signal, writes);
      await this.record(trx, writes);
      return applied;
    });
    return answer !== null && answer.recorded && answer.syncJobIds.length > 0;
  }

  /** Removes the cancelled quantities from a job not yet placed (version-checked); false when it moved meanwhile. */
  private cut(trx: Trx, plan: JobPlan): Promise<boolean> {
    plan.job.order = cutOrder(plan.job.order!, plan.lines, plan.vendorTag);
    return this.deps.jobs.replaceOrderIn(trx, plan.job);
  }

  private supplierTerms(trx: Trx, jobs: SyncJob[]): Promise<Map<string, SupplierTerms>> {
    return this.deps.vendorTags.supplierTermsIn(trx, [...new Set(jobs.map((job) => job.sourceStoreId))]);
  }

  private async vendorTags(trx: Trx, jobs: SyncJob[]): Promise<Map<string, string>> {
    return new Map([...(await this.supplierTerms(trx, jobs))].map(([id, { vendorTag }]) => [id, vendorTag]));
  }

  /**
   * A supplier cancelled an order the service placed: the job records it (`supplierCancelledAt`,
   * `supplierCancelReason`), with audit entry and event `sync_job.supplier_cancelled`, and the to-do
   * list's `supplier_cancelled` entry. Once, unless the one recorded named some lines only (a custom
   * supplier's cancellation of some lines) and this one cancels more (the rest of the order, or the
   * whole): that is recorded too (the reason and the lines say what is cancelled now, a new audit
   * entry and event, the open entry's detail follows), so the reseller is never left believing that
   * the rest of the order ships. The storefront is not changed. An order the service itself asked to
   * cancel (a cancellation of the job that is not over, or that cancelled it), reported back
   * cancelled, changes nothing; nor does an order no job placed (the supplier's own sale). Returns the
   * job, if any, and whether this call recorded the cancellation.
   */
  async recordSupplierCancellation(report: SupplierCancellationReport): Promise<SupplierCancellationRecorded | null> {
    const job = report.syncJob ?? (await this.deps.jobs.findBySourceOrder(report.sourceStoreIds, report.sourceOrderId));
    if (!job) return report.senders ? this.holdUnlessUnowned(report, report.senders) : null;
    if (!report.beyondAsked && (await this.askedFor(job, report.lines))) return { syncJobId: job.id, recorded: false };
    const at = report.at ?? new Date();
    const recorded = await this.repository.transaction(async (trx) => {
      // After a stale entry being raised for the job now (the watch), which this resolves: never one left beside it.
      await holdLock(trx, placedJobLockKey(job.id));
      const cancelled = widenedSupplierCancellation(await this.deps.jobs.supplierCancellationIn(trx, job.id), report, at);
      if (!cancelled) return false;
      await this.deps.jobs.markSupplierCancelledIn(trx, job.id, cancelled.now);
      // Cancelled whole, the order ships nothing; some lines only, the rest is still to ship (and to be tracked).
      if (cancelled.now.lines === null) await this.divergences.resolve(trx, job.id, 'stale');
      await insertAudit(trx, [
        {
          ownerId: job.ownerId,
          resellerStoreId: job.resellerStoreId,
          action: 'sync_job.supplier_cancelled',
          resourceType: 'sync_job',
          resourceId: job.id,
          actorId: SYSTEM_ACTOR,
          metadata: {
            externalOrderId: job.externalOrderId,
            sourceStoreId: job.sourceStoreId,
            sourceOrderId: report.sourceOrderId,
            reason: report.reason,
            lines: report.lines?.length ? report.lines : null,
            ...(cancelled.before && { previousReason: cancelled.before.reason, previousLines: cancelled.before.lines }),
            ...report.via,
          },
        },
      ]);
      const detail = cancelled.now.reason ? `Cancelled by the supplier (${cancelled.now.reason}).` : 'Cancelled by the supplier.';
      const raised = await this.divergences.raise(trx, { ownerId: job.ownerId, resellerStoreId: job.resellerStoreId, syncJobId: job.id, type: 'supplier_cancelled', detail });
      // Recorded before: its open entry now says what is cancelled (a dismissed one is not raised again).
      if (raised === null && cancelled.before) await this.divergences.describe(trx, job.id, 'supplier_cancelled', detail);
      const event = await jobEventIn(trx, 'sync_job.supplier_cancelled', job.id);
      if (event) await this.deps.outbox.append(trx, [event]);
      return true;
    });
    return { syncJobId: job.id, recorded };
  }

  /**
   * A supplier's own cancellation of an order no job has recorded: when a job of a sender, created
   * before it came, could still own that order (it sent its order and never learnt the id: the
   * create answer was lost), it is held for that store (held_supplier_cancellations) until such a job
   * learns the order (`claimHeld`), as a shipment is held (src/fulfillments/service.ts
   * `holdUnlessUnowned`); a redelivery is held once. Otherwise it is the supplier's own sale, unless a
   * job recorded the order between the two reads: then it is recorded on that job now.
   */
  private async holdUnlessUnowned(report: SupplierCancellationReport, senders: SupplierCancellationSender[]): Promise<SupplierCancellationRecorded | null> {
    const receivedAt = new Date();
    const candidates = await withFormerRecords(senders, this.deps.formerRecords);
    const owners = new Set(await this.deps.jobs.storesWithOrdersInDoubt(candidates.map((sender) => sender.id), receivedAt));
    const holders = candidates.filter((sender) => owners.has(sender.id));
    if (holders.length === 0) {
      // A job may have recorded the order between the two reads (no longer in doubt, not found before): look again.
      const late = await this.deps.jobs.findBySourceOrder(report.sourceStoreIds, report.sourceOrderId);
      return late ? this.recordSupplierCancellation({ ...report, syncJob: late }) : null;
    }
    const lines = report.lines?.length ? report.lines.map(({ sku, quantity }) => ({ sku, quantity })) : null;
    await this.deps.held.hold(
      holders.map((holder) => ({
        id: newId('heldSupplierCancellation'),
        ownerId: holder.ownerId,
        resellerStoreId: holder.resellerStoreId,
        sourceStoreId: holder.id,
        sourceOrderId: report.sourceOrderId,
        dedupeKey: heldCancellationKey(lines),
        reason: report.reason,
        lines,
        cancelledAt: report.at ?? receivedAt,
        via: report.via,
        receivedAt,
      })),
    );
    this.deps.logger.info(
      { source_store_ids: holders.map((holder) => holder.id), source_order_id: report.sourceOrderId },
      "supplier's cancellation held until a job records its order",
    );
    return null;
  }

  /**
   * Records held supplier cancellations on the jobs that have since learnt their order (a retry,
   * reconciliation or the divergence watch found it), as their webhook would have
   * (`recordSupplierCancellation`: the job's `supplierCancelledAt`, audit entry and event
   * `sync_job.supplier_cancelled`, the to-do entry), then forgets those no job can own any more. Run
   * by the sweep, after the held fulfillments. Each is deleted once recorded (or found to be the
   * service's own, or recorded already): recording again is a no-op, so a crash between the two
   * records nothing twice. One that cannot be recorded (an error of its own) is kept for the next
   * sweep, behind the others.
   */
  async claimHeld(): Promise<{ supplierCancellationsClaimed: number; supplierCancellationsForgotten: number }> {
    const claimable = await this.deps.held.findClaimable(HELD_CLAIMS_PER_PASS);
    let claimed = 0;
    const done: string[] = [];
    const failed: string[] = [];
    for (const held of claimable) {
      try {
        if (await this.claim(held)) claimed++;
        done.push(held.id);
      } catch (error) {
        failed.push(held.id);
        this.deps.logger.error({ err: error, held_cancellation_id: held.id, job_id: held.syncJobId, source_order_id: held.sourceOrderId }, "held supplier's cancellation could not be recorded on its job: kept for the next sweep");
      }
    }
    await this.deps.held.deleteHeld(done);
    await this.deps.held.markKept(failed, new Date());
    const forgotten = await this.deps.held.forgetUnowned();
    return { supplierCancellationsClaimed: claimed, supplierCancellationsForgotten: forgotten };
  }

  /** A held supplier cancellation recorded on the job that learnt its order; whether it was recorded now. */
  private async claim(held: HeldCancellationRow & { syncJobId: string }): Promise<boolean> {
    const job = await this.deps.jobs.findCurrent(held.syncJobId);
    if (!job) return false;
    const result = await this.recordSupplierCancellation({
      sourceStoreIds: [held.sourceStoreId],
      sourceOrderId: held.sourceOrderId,
      syncJob: job,
      reason: held.reason,
      at: held.cancelledAt,
      lines: held.lines ?? undefined,
      via: { ...held.via, heldSince: held.receivedAt.toISOString() },
    });
    this.deps.logger.info({ job_id: job.id, source_order_id: held.sourceOrderId, recorded: result?.recorded ?? false }, "held supplier's cancellation claimed by its job");
    return result?.recorded ?? false;
  }

  /**
   * A supplier shipped an order no job recorded that may be the order of these jobs, each ended
   * unplaced after sending its order (its whole-order cancellation's lookup found nothing:
   * `not_placed`), and the service could not tell whose it is (`why`: the supplier's order could not
   * be read, or the jobs are past the time their supplier's unknown shipments are read for them).
   * The shipment is not pushed (it may be the supplier's own sale), so it must not go unnoticed
   * (order-changes.md): in one transaction, each job's `not_placed` cancellation gets an audit entry
   * `cancellation.shipment_unattributed` naming the shipment (once per cancellation and shipment,
   * under a lock on both: two sweeps overlapping, or a webhook redelivered, report it once), and the job a `too_late` entry on the
   * to-do list (once per job, as every entry: its detail names the first such shipment; a dismissed
   * one is not raised again). The cancellation's outcome is left as it is: nothing proves the order
   * was the job's. Returns how many entries were raised.
   */
  async shipmentUnattributed(jobs: SyncJob[], shipment: UnattributedShipment): Promise<number> {
    if (jobs.length === 0) return 0;
    return this.repository.transaction(async (trx) => {
      const cancellations = await this.repository.forJobsIn(trx, jobs.map((job) => job.id));
      const numbers = shipment.trackingNumbers.length > 0 ? ` (tracking ${shipment.trackingNumbers.join(', ')})` : '';
      let raised = 0;
      for (const job of jobs) {
        const unplaced = cancellations.findLast((c) => c.syncJobId === job.id && c.scope === 'order' && c.status === 'completed' && c.outcome === 'not_placed');
        if (!unplaced) continue;
        // Once per cancellation and shipment: two sweeps (or a webhook's redelivery) checking the same shipment at once write it once.
        const subject = { sourceStoreId: shipment.sourceStoreId, sourceOrderId: shipment.sourceOrderId, trackingNumbers: shipment.trackingNumbers };
        await insertAuditOnce(
          trx,
          cancellationAuditRecord(unplaced, 'cancellation.shipment_unattributed', SYSTEM_ACTOR, { outcome: unplaced.outcome, ...subject, why: shipment.why }),
          `cancellation.shipment_unattributed:${unplaced.id}:${shipment.sourceStoreId}:${shipment.sourceOrderId}`,
          subject,
        );
        const id = await this.divergences.raise(trx, {
          ownerId: job.ownerId,
          resellerStoreId: job.resellerStoreId,
          syncJobId: job.id,
          type: 'too_late',
          subjectId: unplaced.id,
          detail:
            `The supplier shipped its order ${shipment.sourceOrderId}${numbers}, which the service could not attribute (${shipment.why}). ` +
            `This job's order was cancelled before its placement was confirmed and no order was found (not_placed): ` +
            `if ${shipment.sourceOrderId} carries this job's reference (${job.id}), the goods are on their way and need a return, and the customer has no tracking.`,
        });
        if (id !== null) raised += 1;
      }
      return raised;
    });
  }

  /**
   * The divergence watch lists a supplier order the service placed, not cancelled whole, showing some
   * of its lines cancelled (`shown`, per supplier SKU, every cancellation of them until `listedAt`):
   * what it shows beyond every quantity the service asked of the job (its lines cancellations but cuts,
   * whatever they ended with) the supplier cancelled itself, its webhook lost (order-changes.md:
   * "Cancelled at the supplier: as a supplier's own cancellation"). That is recorded as its webhook
   * would have been (`recordSupplierCancellation`, with those lines). Nothing once the service asked for
   * the whole order (it cancelled what was open of it, or is about to). Returns whether anything new
   * was recorded: a later pass showing the same lines records nothing more.
   */
  async recordShownSupplierLines(job: SyncJob, found: { sourceOrderId: string; shown: CancelledLine[]; listedAt: Date; watchPassId: string }): Promise<boolean> {
    const asks = await this.asksOf(job);
    if (asks.whole) return false;
    const own = found.shown.map(({ sku, quantity }) => ({ sku, quantity: quantity - asks.askedOf(sku) })).filter((line) => line.quantity > 0);
    if (own.length === 0) return false;
    const via = { source: 'watch', watchPassId: found.watchPassId };
    const result = await this.recordSupplierCancellation({ sourceStoreIds: [job.sourceStoreId], sourceOrderId: found.sourceOrderId, syncJob: job, reason: null, at: found.listedAt, lines: own, via, beyondAsked: true });
    return result?.recorded ?? false;
  }

  /**
   * Whether the service asked for what the supplier reports cancelled (`asksOf`): a whole-order ask
   * covers any report; lines asked cover a report of those lines, or of the whole order once they
   * cover every line of the job (the supplier closes an order with nothing left in it).
   */
  private async askedFor(job: SyncJob, reported: CancelledLine[] | undefined): Promise<boolean> {
    const asks = await this.asksOf(job);
    if (asks.whole) return true;
    if (!asks.lines) return false;
    if (reported !== undefined && reported.length > 0) return reported.every(({ sku, quantity }) => asks.askedOf(sku) >= quantity);
    const ordered = supplierLinesOf(job, asks.vendorTag);
    return ordered !== null && ordered.length > 0 && ordered.every(({ sku, quantity }) => asks.askedOf(sku, 'as ordered') >= quantity);
  }

  /**
   * What the service asked of the job's supplier order: any cancellation of the job but a cut,
   * whatever it came to: one still being made or retried (a request that timed out may have landed),
   * one that died asking (a retry will find the order cancelled), one that cancelled (also when a
   * fulfillment then made it `too_late`: the supplier had accepted it, and may echo it late), and one
   * that ended `too_late` or `unsupported` after cancelling what was still open of it ("the rest was
   * cancelled"). `whole` when one was of the whole order (`cancelledWhole`); else whether any lines
   * were asked, and the quantity asked of a SKU, by the name a supplier gives it (the storefront's or
   * the one its pricing made, as the attempt asked), or only as the job's order names it. The supplier's
   * terms are read only when lines were asked.
   */
  private async asksOf(job: SyncJob): Promise<{ whole: true } | { whole: false; lines: boolean; vendorTag: string | null; askedOf: (sku: string, named?: 'as ordered') => number }> {
    const cancellations = await this.repository.listForJob(job.id);
    if (cancellations.some(cancelledWhole)) return { whole: true };
    // Cuts never reached the supplier: the order was placed without those quantities.
    const lines = cancellations.filter((c) => c.scope === 'lines' && !isCut(c)).flatMap((c) => c.lines);
    const terms = lines.length > 0 ? await this.deps.vendorTags.supplierTermsOf(job.sourceStoreId) : null;
    const names = (line: CancelledLine, sku: string, named?: 'as ordered') =>
      line.sku === sku || (named === undefined && (line.supplierSku === sku || (terms !== null && supplierSku(line.sku, terms.pricingConfig) === sku)));
    return {
      whole: false,
      lines: lines.length > 0,
      vendorTag: terms?.vendorTag ?? null,
      askedOf: (sku, named) => lines.filter((line) => names(line, sku, named)).reduce((sum, line) => sum + line.quantity, 0),
    };
  }

  /**
   * A fulfillment was recorded (in `trx`, its transaction: by the webhook, the divergence watch or a
   * held fulfillment's claim) for a job whose whole order a cancellation ended `cancelled` or
   * `not_placed`: the supplier shipped anyway. That cancellation becomes `too_late` (event
   * `cancellation.too_late`, a `too_late` entry on the to-do list), once (`shippedAnywayIn`). The
   * recording holds the job's placed-job lock, as such a cancellation's outcome does: a fulfillment
   * recorded while the cancellation was in flight is found by its outcome (src/cancellations/attempt.ts).
   */
  async fulfilledAfterCancellationIn(trx: Trx, syncJobId: string): Promise<void> {
    await shippedAnywayIn(trx, { repository: this.repository, divergences: this.divergences, outbox: this.deps.outbox }, syncJobId, SHIPPED_AFTER_CANCELLATION);
  }

  /** A job's cancellations with their timelines, oldest first (its GET's `cancellations`). */
  viewsOfJob(syncJobId: string): Promise<CancellationView[]> {
    return cancellationsOfJob(this.deps.timelines, this.repository, syncJobId);
  }

  /** A store's cancellations counted by status and by outcome (its stats' `cancellations`). */
  statsOf(resellerStoreId: string): Promise<CancellationStats> {
    return cancellationStats(this.repository, resellerStoreId);
  }

  /**
   * POST /v1/sync_jobs/{id}/cancellations/{cancellation_id}/retry: a failed or dead one, as a job
   * retry does. Answers its sync job as its GET shows it once the retry is written (the object of the
   * `cancellation.retried` event, read in the retry's transaction), as a job's retry answers the job it
   * wrote: a read after the commit could already find a worker's take.
   */
  async retry(principal: Principal, syncJobId: string, cancellationId: string): Promise<JobDetail> {
    return retryByHand(this.deps, cancellationKind, {
      find: () => this.repository.findOwned(principal.userId, syncJobId, cancellationId),
      audit: (cancellation) => cancellationAuditRecord(cancellation, 'cancellation.retried', actorOf(principal), { attempts: cancellation.attempts, ...auditContext(principal) }),
      repository: this.repository,
      written: async (trx) => {
        // Jobs are never deleted, and this transaction just wrote one of its cancellations.
        const event = await jobEventIn(trx, 'cancellation.retried', syncJobId);
        if (!event) throw notFound();
        await this.deps.outbox.append(trx, [event]);
        return event.object as JobDetail;
      },
      names: { many: 'cancellations', one: 'cancellation' },
    });
  }
}

/**
 * What the storefront order showed cancelled when a manual job's attempt read it to place it: the job
 * stores the order it placed (its open lines) with that read (src/sync-jobs/attempt.ts). None for a
 * job routed from a webhook (its order's own `listed:` signal says it) or a manual job not placed yet.
 */
function readOf(job: SyncJob): NonNullable<SyncJob['order']>['cancelledBefore'] | undefined {
  return job.origin === 'manual' ? job.order?.cancelledBefore : undefined;
}

/**
 * Whether a manual job's read of the storefront order came after this signal was made (its platform
 * time no later than the order's time read): the read showed what the signal cancelled, on whichever
 * of the order's lines the storefront took it (a custom cancellation names the SKU only), and the job
 * placed only what was left open, so none of the signal's lines naming no vendor is its to cancel.
 */
function readCovers(job: SyncJob, signal: OrderCancellation): boolean {
  const read = readOf(job);
  return Boolean(read && signal.scope === 'lines' && signal.occurredAt && new Date(signal.occurredAt).getTime() <= new Date(read.asOf).getTime());
}

/** The signals (of `orderSignals`, the job's order's) that a manual job's read of its order holds: it placed none of their quantities. */
function heldByJobRead(job: SyncJob, vendorTag: string | null, orderSignals: OrderCancellation[]): Set<string> {
  const read = readOf(job);
  if (!read || orderSignals.length === 0) return new Set();
  const skus = skusOfRead(job, vendorTag);
  // A line naming no vendor (custom's) is the job's when its SKU is.
  return heldByRead(read, orderSignals, (line) => (line.vendor === undefined ? skus.has(line.sku) : vendorTag === null || vendorMatches(line.vendor, vendorTag)));
}

/**
 * An order's signals as the divergence watch accounts for what the storefront shows cancelled, with
 * what its manual jobs' reads showed cancelled: each such job placed none of it (a quantity no signal
 * brought, when its webhook was lost too), so it is accounted for as a signal of the job's vendor
 * lines, made at the read's time; a signal that read holds (`heldByJobRead`) keeps only its lines of
 * other suppliers, its quantities being among the read's.
 */
function withManualReads(signals: OrderCancellation[], jobs: SyncJob[], vendorTags: Map<string, string>): OrderCancellation[] {
  let accounted = signals;
  for (const job of jobs) {
    const read = readOf(job);
    if (!read) continue;
    const vendorTag = vendorTags.get(job.sourceStoreId) ?? null;
    const skus = skusOfRead(job, vendorTag);
    const ofJob = (line: CancelledOrderLine) => (line.vendor === undefined ? skus.has(line.sku) : vendorTag === null || vendorMatches(line.vendor, vendorTag));
    const held = heldByJobRead(job, vendorTag, signals);
    accounted = accounted.map((signal) => (held.has(signal.id) ? { ...signal, lines: signal.lines.filter((line) => !ofJob(line)) } : signal));
    const lines = read.lines.filter((line) => line.vendor !== '' && ofJob(line)).map(({ sku, vendor, quantity }) => ({ sku, vendor, quantity }));
    if (lines.length === 0) continue;
    // First: a watch's snapshot holds only the signals recorded after it, and the read's quantities are none of its.
    accounted.unshift({
      id: `read:${job.id}`,
      ownerId: job.ownerId,
      resellerStoreId: job.resellerStoreId,
      externalOrderId: job.externalOrderId,
      scope: 'lines',
      lines,
      dedupeKey: `read:${job.id}`,
      receivedAt: new Date(read.asOf),
      occurredAt: new Date(read.asOf),
    });
  }
  return accounted;
}

/**
 * The order's `listed:` signal (what routing read cancelled, every cancellation until then) as it
 * concerns a job that existed before it (a manual job, placed before the order was routed): less what
 * that job's read showed cancelled of its vendor lines, which it never placed, and less what the
 * job's cancellations from signals the listed snapshot counts took already (a webhook applied to the
 * job between its read and the routing: made no later than the order routing read, or held by the
 * snapshot). Any other signal as it is.
 */
function listedBeyondRead(signal: OrderCancellation, job: SyncJob, vendorTag: string | null, ofJob: Cancellation[], orderSignals: OrderCancellation[]): OrderCancellation {
  if (!isListedSignal(signal.dedupeKey)) return signal;
  const read = readOf(job);
  const left = new Map<string, number>();
  for (const line of read?.lines ?? []) if (vendorTag === null || vendorMatches(line.vendor, vendorTag)) left.set(JSON.stringify([line.sku, line.vendor]), (left.get(JSON.stringify([line.sku, line.vendor])) ?? 0) + line.quantity);
  const beyondRead = signal.lines.flatMap((line) => {
    const key = JSON.stringify([line.sku, line.vendor ?? '']);
    const placedWithout = Math.min(line.quantity, left.get(key) ?? 0);
    left.set(key, (left.get(key) ?? 0) - placedWithout);
    return line.quantity > placedWithout ? [{ ...line, quantity: line.quantity - placedWithout }] : [];
  });
  // What the job's own cancellations from signals the snapshot counts took: asked of the supplier once already.
  const heldBy = heldBySnapshot(orderSignals);
  const at = signal.occurredAt ? new Date(signal.occurredAt).getTime() : null;
  const counted = new Set(
    orderSignals
      .filter((s) => s.id !== signal.id && s.scope === 'lines' && (heldBy.get(s.id)?.id === signal.id || (at !== null && s.occurredAt && new Date(s.occurredAt).getTime() <= at)))
      .map((s) => s.id),
  );
  const taken = new Map<string, number>();
  for (const c of ofJob) if (c.scope === 'lines' && counted.has(c.signalId)) for (const line of c.lines) taken.set(line.sku, (taken.get(line.sku) ?? 0) + line.quantity);
  if (taken.size === 0) return { ...signal, lines: beyondRead };
  const ofJobVendor = (line: CancelledOrderLine) => line.vendor === undefined || vendorTag === null || vendorMatches(line.vendor, vendorTag);
  const lines = beyondRead.flatMap((line) => {
    if (!ofJobVendor(line)) return [line];
    const already = Math.min(line.quantity, taken.get(line.sku) ?? 0);
    taken.set(line.sku, (taken.get(line.sku) ?? 0) - already);
    return line.quantity > already ? [{ ...line, quantity: line.quantity - already }] : [];
  });
  return { ...signal, lines };
}

/** The SKUs of a manual job's supplier in the order its attempt read: placed, or read cancelled, of its vendor. */
function skusOfRead(job: SyncJob, vendorTag: string | null): Set<string> {
  const read = readOf(job)?.lines ?? [];
  const ofVendor = (vendor: string) => vendorTag === null || vendorMatches(vendor, vendorTag);
  return new Set([...(supplierLinesOf(job, vendorTag) ?? []).map((line) => line.sku), ...read.filter((line) => ofVendor(line.vendor)).map((line) => line.sku)]);
}

/** The supplier lines of a job: the reseller order's lines of the job's vendor (null when the job has no stored order). */
function supplierLinesOf(job: SyncJob, vendorTag: string | null): CancelledLine[] | null {
  if (!job.order || vendorTag === null) return null;
  const sums = new Map<string, number>();
  for (const line of job.order.lines) {
    if (vendorMatches(line.vendor, vendorTag)) sums.set(line.sku, (sums.get(line.sku) ?? 0) + line.quantity);
  }
  return [...sums].map(([sku, quantity]) => ({ sku, quantity }));
}

/**
 * What a signal asks of one job, or null when it finds nothing open there: the quantity still open
 * per line is what the job was ordered (after cuts) less what its cancellations hold (every
 * cancellation but those that ended too_late or unsupported); a signal never cancels more. A job
 * whose every line is then cancelled is cancelled as a whole.
 */
function planFor(job: SyncJob, vendorTag: string | null, existing: Cancellation[], signal: OrderCancellation, unnamed: ReadonlyMap<string, number> = new Map()): JobPlan | null {
  const holding = existing.filter(holdsQuantity);
  const open = openLinesOf(job, vendorTag, existing);
  if (open === null) {
    // A manual job not placed yet (no stored order): only the whole order can be cancelled, once. Its
    // attempt places what the storefront order still shows open, and its placement applies the lines
    // signals received meanwhile (`applyToPlacedIn`).
    if (signal.scope !== 'order' || holding.some(cancelledWhole)) return null;
    return { job, vendorTag, scope: 'order', lines: [] };
  }
  if (holding.some(cancelledWhole)) return null;
  const asked =
    signal.scope === 'order'
      ? open
      : open.map(({ sku, quantity }) => ({ sku, quantity: Math.min(quantity, namedQuantity(signal, sku, vendorTag) + (unnamed.get(sku) ?? 0)) }));
  const lines = asked.filter((line) => line.quantity > 0);
  if (lines.length === 0) return null;
  const whole = open.every(({ sku, quantity }) => (lines.find((line) => line.sku === sku)?.quantity ?? 0) >= quantity);
  const cutBefore = holding.some((c) => c.scope === 'lines' && !isCut(c));
  // Whole only when nothing was cancelled line by line at the supplier before: then the supplier order still
  // has every line. Cuts never reached it (it is placed without them), so a job cut to nothing is voided.
  return { job, vendorTag, scope: whole && (!cutBefore || signal.scope === 'order') ? 'order' : 'lines', lines };
}

/**
 * The quantity still open per line of a job: what it was ordered (after cuts) less what its
 * cancellations hold (every cancellation but those that ended too_late or unsupported; nothing is
 * open under a whole-order one); null when the job has no stored order (a manual job not placed yet).
 */
function openLinesOf(job: SyncJob, vendorTag: string | null, existing: Cancellation[]): CancelledLine[] | null {
  const ordered = supplierLinesOf(job, vendorTag);
  if (ordered === null) return null;
  // A whole-order cancellation holds every line (also one asked before a manual job had lines).
  if (existing.some((c) => holdsQuantity(c) && cancelledWhole(c))) return ordered.map(({ sku }) => ({ sku, quantity: 0 }));
  // A cut (at the signal or by its attempt) already left the stored order; it holds nothing more.
  const holding = existing.filter((c) => holdsQuantity(c) && !isCut(c));
  return ordered.map(({ sku, quantity }) => {
    const held = holding.reduce((sum, c) => sum + (c.lines.find((line) => line.sku === sku)?.quantity ?? 0), 0);
    return { sku, quantity: Math.max(0, quantity - held) };
  });
}

/** What a lines signal cancels of a SKU on a job of this vendor by the lines that name it (a platform_a refund's, a snapshot's). */
function namedQuantity(signal: OrderCancellation, sku: string, vendorTag: string | null): number {
  const named = (line: CancelledOrderLine) => line.sku === sku && line.vendor !== undefined && vendorTag !== null && vendorMatches(line.vendor, vendorTag);
  return signal.lines.filter(named).reduce((sum, line) => sum + line.quantity, 0);
}

/**
 * A lines signal's lines that name no vendor (a custom cancellation's: by SKU alone, platforms.md),
 * shared among the order's jobs: its quantity of a SKU is cancelled once, not once per job whose
 * supplier sells that SKU in the order. What the signal took of it before (`spent`: by its
 * cancellations of jobs it reached, or as a manual job's read already counted) is gone; the rest goes
 * to the jobs (`open`: null for one the signal does not plan) with that SKU still open beyond what the
 * signal names of their vendor, line by line in the order of the storefront order's lines (the first
 * line of the SKU still open first, to its job; a job's open quantity is on its last lines of the SKU),
 * as a storefront cancelling by SKU takes its first open line of it. Returns,
 * per job id, the quantity per SKU it gets.
 */
function unnamedShares(
  signal: OrderCancellation,
  jobs: { job: SyncJob; vendorTag: string | null; open: CancelledLine[] | null; spent: CancelledLine[] }[],
): Map<string, Map<string, number>> {
  const shares = new Map<string, Map<string, number>>();
  if (signal.scope !== 'lines') return shares;
  const left = new Map<string, number>();
  for (const line of signal.lines) if (line.vendor === undefined) left.set(line.sku, (left.get(line.sku) ?? 0) + line.quantity);
  for (const { spent } of jobs) for (const line of spent) if (left.has(line.sku)) left.set(line.sku, Math.max(0, left.get(line.sku)! - line.quantity));
  for (const [sku, quantity] of left) {
    let remaining = quantity;
    // Line by line, in the storefront's numbering of the order's lines (`linePosition`: a manual job's
    // order lists its open lines only, a cut job's lacks lines cut whole): the storefront takes its first
    // line of the SKU still open. A job's open quantity of the SKU (beyond what the signal names of its
    // vendor) is on its last lines of it, its first ones taken by the cancellations before.
    const openLines = jobs
      .filter(({ open }) => open !== null)
      .flatMap(({ job, vendorTag, open }) => {
        const ofSku = (job.order?.lines ?? [])
          .map((line, index) => ({ line, position: linePosition(line, index) }))
          .filter(({ line }) => line.sku === sku && (vendorTag === null || vendorMatches(line.vendor, vendorTag)));
        let openOfSku = Math.max(0, (open!.find((line) => line.sku === sku)?.quantity ?? 0) - namedQuantity(signal, sku, vendorTag));
        const lines: { job: SyncJob; position: number; open: number }[] = [];
        for (const { line, position } of ofSku.reverse()) {
          const lineOpen = Math.min(openOfSku, line.quantity);
          openOfSku -= lineOpen;
          lines.push({ job, position, open: lineOpen });
        }
        return lines;
      })
      .sort((a, b) => a.position - b.position);
    for (const { job, open } of openLines) {
      if (remaining <= 0) break;
      const share = Math.min(remaining, open);
      if (share === 0) continue;
      remaining -= share;
      const ofJob = shares.get(job.id) ?? new Map<string, number>();
      shares.set(job.id, ofJob.set(sku, (ofJob.get(sku) ?? 0) + share));
    }
  }
  return shares;
}

/** The quantities of a signal's lines naming no vendor that this job's cancellations from it took (beyond what the signal names of its vendor). */
function unnamedSpentBy(signal: OrderCancellation, vendorTag: string | null, cancellations: Cancellation[]): CancelledLine[] {
  const skus = new Set(signal.lines.filter((line) => line.vendor === undefined).map((line) => line.sku));
  return [...skus].map((sku) => {
    const took = cancellations.reduce((sum, c) => sum + (c.lines.find((line) => line.sku === sku)?.quantity ?? 0), 0);
    return { sku, quantity: Math.max(0, took - namedQuantity(signal, sku, vendorTag)) };
  });
}

/**
 * A new cancellation of the plan's lines. With the supplier's pricing (`pricing`), each line also
 * names the SKU the supplier holds it under when that pricing makes another one (`supplierSku`),
 * checked against the SKUs the supplier order is known to hold (the job's `supplierLines`, when
 * kept); without (a cancellation asked again, of lines that name it already), the lines are kept as they are.
 */
function newCancellation(signal: OrderCancellation, plan: JobPlan, now: Date, pricing: PricingConfig | null = null): Cancellation {
  return {
    ...cancellationKind.initialColumns(now),
    id: newId('cancellation'),
    ownerId: plan.job.ownerId,
    resellerStoreId: plan.job.resellerStoreId,
    syncJobId: plan.job.id,
    signalId: signal.id,
    scope: plan.scope,
    lines: pricing ? plan.lines.map((line) => withSupplierSku(line, pricing, plan.job.supplierLines ?? null)) : plan.lines,
    outcome: null,
    reason: null,
    queueMessageId: newMessageId(),
    version: 1,
    createdAt: now,
    updatedAt: now,
  } as Cancellation;
}

/**
 * The line, naming the SKU its supplier holds it under when the supplier's pricing makes another one.
 * The pricing may have changed since the order was placed: where the supplier order's lines are known
 * (`held`) and hold the storefront's SKU but not the one the pricing makes now, or neither, the SKU
 * it was placed with is not known, and the line is named as the storefront names it.
 */
function withSupplierSku({ sku, quantity }: CancelledLine, pricing: PricingConfig, held: SupplierLine[] | null): CancelledLine {
  const supplier = supplierSku(sku, pricing);
  if (supplier === sku || (held !== null && !held.some((line) => line.sku === supplier))) return { sku, quantity };
  return { sku, quantity, supplierSku: supplier };
}

/** The `order.cancelled` event of a storefront signal. */
function orderCancelledEvent(signal: Pick<OrderCancellation, 'resellerStoreId' | 'externalOrderId' | 'scope' | 'lines'>, ownerId: string, syncJobIds: string[]): NewEvent {
  return {
    ownerId,
    resellerStoreId: signal.resellerStoreId,
    type: 'order.cancelled',
    object: { resellerStoreId: signal.resellerStoreId, externalOrderId: signal.externalOrderId, scope: signal.scope, lines: signal.lines.map(({ sku, quantity }) => ({ sku, quantity })), syncJobIds },
  };
}

function orderAudit(signal: Pick<CancellationSignal, 'ownerId' | 'resellerStoreId' | 'externalOrderId' | 'scope' | 'lines'> & { via: Record<string, unknown> }, metadata: Record<string, unknown>): AuditRecord {
  return {
    ownerId: signal.ownerId,
    resellerStoreId: signal.resellerStoreId,
    action: 'order.cancelled',
    resourceType: 'order',
    resourceId: signal.externalOrderId,
    actorId: SYSTEM_ACTOR,
    metadata: { scope: signal.scope, lines: signal.lines, ...signal.via, ...metadata },
  };
}

/**
 * What a job records of a supplier's own cancellation after this report (`now`), and what it had
 * recorded (`before`); null when the report adds nothing to it (a redelivery, or the whole order
 * recorded already). The first report is recorded as it is (its lines, or the whole order). After
 * one of some lines: the whole order (no lines) is recorded with its own reason; lines beyond those
 * recorded (per SKU, the most reported, so a redelivery counts once) with both reasons. The time
 * stays the first one's.
 */
function widenedSupplierCancellation(before: SupplierCancelled | null, report: SupplierCancellationReport, at: Date): { now: SupplierCancelled; before: SupplierCancelled | null } | null {
  const reported = report.lines?.length ? report.lines.map(({ sku, quantity }) => ({ sku, quantity })) : null;
  if (before === null) return { now: { at, reason: report.reason, lines: reported }, before: null };
  if (before.lines === null) return null;
  if (reported === null) return { now: { at: before.at, reason: report.reason, lines: null }, before };
  const merged = new Map(before.lines.map(({ sku, quantity }) => [sku, quantity]));
  let more = false;
  for (const { sku, quantity } of reported) {
    if (quantity > (merged.get(sku) ?? 0)) {
      merged.set(sku, quantity);
      more = true;
    }
  }
  if (!more) return null;
  const reasons = [...new Set([before.reason, report.reason].filter((text): text is string => text !== null && text !== ''))];
  const reason = storableText(reasons.join('; '), MAX_REASON_LENGTH) || null;
  return { now: { at: before.at, reason, lines: [...merged].map(([sku, quantity]) => ({ sku, quantity })) }, before };
}

/** What a held supplier cancellation cancels, as its key: the whole order, or these lines (a digest: the lines are kept in full beside it). */
function heldCancellationKey(lines: CancelledLine[] | null): string {
  if (lines === null) return 'order';
  const sorted = [...lines].sort((a, b) => a.sku.localeCompare(b.sku) || a.quantity - b.quantity).map(({ sku, quantity }) => [sku, quantity]);
  return `lines:${createHash('sha256').update(JSON.stringify(sorted)).digest('hex')}`;
}
