import type { Trx } from '../db/sql.ts';
import type { NewEvent } from '../events/types.ts';
import { SYSTEM_ACTOR, type AuditRecord } from '../audit-log/repository.ts';
import type { Attempt, DeathReason } from '../attempts/kind.ts';
import { JobFailure } from '../attempts/failure.ts';
import { connectionOf, callsTo } from '../attempts/store-connection.ts';
import type { Created, PlatformAdapters, StoreConnection } from '../platforms/types.ts';
import type { SecretBox } from '../shared/secrets.ts';
import { openOrder } from '../orders/open.ts';
import type { ResellerOrder } from '../orders/types.ts';
import { buildSupplierOrder, PricingError } from '../pricing/index.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import type { SyncJob } from './entity.ts';
import { syncJobEvent, syncJobEventsIn } from './events.ts';
import type { SyncJobRepository, JobWithSource } from './repository.ts';
import type { PlacedManualJobs, SupplierSuccessors, SupplierTwins } from './ports.ts';
import { answeringFor } from '../source-stores/former-records.ts';
import { diedOfFailedAttempt } from '../../machines/attempt.machine.ts';

/** What a sync job's attempt needs, built once per process (src/workers/kinds.ts hands them over). */
export interface SyncJobAttemptDeps {
  syncJobReads: SyncJobRepository;
  platforms: PlatformAdapters;
  secrets: SecretBox;
  supplierTwins: SupplierTwins;
  placedManualJobs: PlacedManualJobs;
  /** The active record that answers for a job's deleted supplier record (a supplier deleted and created again). */
  supplierSuccessors: SupplierSuccessors;
}

/**
 * Platforms keep an Idempotency-Key 24 hours (platforms.md). A retry of a job older than this (a
 * manual retry of a dead job, a day later) can no longer count on it: an earlier attempt whose answer
 * was lost may have created the order, so the order is looked for by its reference first.
 */
const IDEMPOTENCY_TRUSTED_MS = 12 * 60 * 60_000;
/** How long the lookup's calls wait for the store's turn beyond the one the attempt reserved for them. */
const LOOKUP_TURN_WAIT_MS = 60_000;

/**
 * Whether this attempt looks for the order by its reference before creating it: a retry of a job
 * that was over IDEMPOTENCY_TRUSTED_MS old when the attempt was taken (the take sets `updatedAt`),
 * or any retry made through the active record that replaced the job's deleted one (`answersFor`):
 * platforms.md promises an Idempotency-Key's replay within 24 hours, not across another record's
 * credentials, and an earlier attempt through the deleted record may have created the order.
 * A function of the work as the take leaves it, not of the clock: the turns `targets` reserves and
 * the calls `perform` makes, read at different moments, are decided once and agree.
 */
const looksUpFirst = ({ row: job, answersFor }: JobWithSource): boolean =>
  job.attempts > 1 && (answersFor !== undefined || job.updatedAt.getTime() - job.createdAt.getTime() > IDEMPOTENCY_TRUSTED_MS);
/**
 * The turns of the supplier an attempt reserves (`targets`) and its calls spend (`perform`): the
 * create, and one more for a lookup first, or for a manual job that sent orders before, which may
 * read the supplier's order after creating it (`heldOrder`; the lookup's spare turn serves it once found).
 */
const supplierCalls = (work: JobWithSource): number => (looksUpFirst(work) || (!work.row.order && (work.row.sentOrders?.length ?? 0) > 0) ? 2 : 1);

/** One attempt of a sync job: place the supplier's part of the order on its source store. */
export function placeSupplierOrder(ctx: SyncJobAttemptDeps): Attempt<JobWithSource> {
  const jobs = ctx.syncJobReads;

  /**
   * A manual job's order, read from the storefront at each attempt. An order the storefront shows
   * cancelled is not placed: its cancellation may never have reached the service (a lost webhook, an
   * order from before the store was connected), and the supplier would ship what the customer cancelled.
   */
  async function readResellerOrder(job: SyncJob, reseller: ResellerStore | null): Promise<{ open: ResellerOrder; read: ResellerOrder }> {
    if (!reseller) throw new JobFailure('the reseller store was deleted');
    const order = await ctx.platforms[reseller.platform].getOrder(connectionOf(ctx, reseller, 1), job.externalOrderId);
    if (order.cancelled) throw new JobFailure(`the storefront order ${job.externalOrderId} is cancelled: nothing is placed on the supplier`);
    // Lines the storefront shows cancelled (their webhook lost, or not here yet) are not placed; the
    // job keeps what the read showed cancelled, so their webhooks, late, cancel nothing more (`placed`).
    const open = openOrder(order);
    if (open.lines.length === 0) throw new JobFailure(`every line of the storefront order ${job.externalOrderId} is cancelled: nothing is placed on the supplier`);
    return { open, read: { ...open, ...(order.cancelledBefore && { cancelledBefore: order.cancelledBefore }) } };
  }

  /**
   * The order each manual job's successful attempt found the supplier holding (its open lines, with what
   * the read that sent it showed cancelled: `heldOrder`), by the job's row as the attempt had it: the outcome's transaction stores it on
   * the job (`outcomesWrittenIn`), so partial cancellations find the job's lines like any job's.
   */
  const placed = new WeakMap<SyncJob, ResellerOrder>();

  /**
   * A manual job's supplier with an active twin (another supplier of the storefront whose vendor tag
   * folds alike, kept by Migration20261127041900) places nothing: the twin matches every line it
   * does, so a job for each would place them twice. POST /v1/sync_jobs refuses such a job (409
   * `vendor_tag_ambiguous`); this stops one made before (an older service) or retried since. It fails
   * with the reason, and dies onto the reseller's to-do list; deleting a twin lets a retry place it.
   * (A routed job has its lines from the routing, which sends a line two suppliers match to neither.)
   */
  async function refuseTwin(source: { id: string; resellerStoreId: string; vendorTag: string }): Promise<void> {
    const twins = await ctx.supplierTwins.activeTwinsOf(source);
    if (twins.length === 0) return;
    throw new JobFailure(
      `the vendor tag "${source.vendorTag}" matches the same lines as that of another active source store of this reseller store (${twins.join(', ')}): nothing is placed, or both would place them; delete one of them, then retry`,
    );
  }

  /**
   * Of the orders a manual job sent (`candidates`, oldest first), the one the supplier's order
   * (`created`) holds: the create's answer may be an earlier attempt's order (its Idempotency-Key's
   * replay, or found by its reference), with that attempt's lines, or this attempt's, the earlier ones
   * having created nothing (a 500). When they all have the same supplier lines, the newest. Else the
   * newest whose lines the create's answer lists (platform_a's and platform_b's do; a replay gives
   * the first create's), else the newest whose lines the supplier's order has, read once; when none
   * matches (the supplier changed it), the first sent, whose read shows the least cancelled, so what
   * was cancelled after it is asked of the supplier rather than assumed never placed. A read that
   * fails fails the attempt, which is retried (the create replays the order): guessing either way
   * would ship a cancelled line or cancel one the customer kept.
   */
  async function heldOrder(source: SourceStore, connection: StoreConnection, created: Created, candidates: ResellerOrder[], read: ResellerOrder): Promise<ResellerOrder> {
    const linesOf = supplierLinesOf(source);
    if (candidates.length === 0) return read;
    if (new Set(candidates.map(linesOf)).size === 1) return candidates.at(-1)!;
    const answered = created.lines ? sameLines(created.lines) : null;
    const byAnswer = answered === null ? undefined : candidates.findLast((candidate) => linesOf(candidate) === answered);
    if (byAnswer) return byAnswer;
    // On the attempt's connection: a turn its targets reserved and its lookup or create left, else one of its own.
    const held = await ctx.platforms[source.platform].readSupplierLines(connection, created.id);
    const holds = sameLines(held.lines);
    return candidates.findLast((candidate) => linesOf(candidate) === holds) ?? candidates[0]!;
  }

  /**
   * A job of a deleted record, about to create its order through the record that replaced it, when
   * that record has a job of the same order: one made by hand (POST /v1/sync_jobs; routing makes no
   * job for a supplier added after the order's routing, operations.md), by a reseller who re-placed
   * the order through the new record. That job places the order; this one creating it too would be
   * a second supplier order. It fails with the reason (and dies onto the to-do list) instead.
   */
  async function refuseSuccessorsJob(job: SyncJob, successor: SourceStore): Promise<void> {
    const other = await jobs.findOwnedOfOrder(job.ownerId, job.externalOrderId, successor.id);
    if (!other || other.resellerStoreId !== job.resellerStoreId) return;
    throw new JobFailure(
      `the source store was deleted; the active source store ${successor.id} that replaced it has its own job ${other.id} for this order: nothing is placed by this job, or the order would be placed twice`,
    );
  }

  return {
    /**
     * The jobs with their source stores. A job whose record was deleted is attempted through the
     * active record of the same supplier that replaced it (`SupplierSuccessors`: same reseller store,
     * owner, platform and shop domain; a supplier deleted and created again to fix a token or a
     * setting): that record's id, credentials and pacing, with the deleted record's vendor tag and
     * pricing (`answeringFor`), by which the job's lines were matched and are priced. The job stays
     * the deleted record's (its `sourceStoreId`, audit entries and events); its outcome's audit entry
     * also names the record that answered (`answeredBySourceStoreId`, `jobOutcomeAudit`). A deleted record that
     * nothing replaced leaves the job without a store: it fails, as before.
     */
    async load(jobIds) {
      const loaded = await jobs.loadWithSources(jobIds);
      const orphaned = [...new Set(loaded.filter((work) => work.source === null).map((work) => work.row.sourceStoreId))];
      if (orphaned.length === 0) return loaded;
      const successors = await ctx.supplierSuccessors.successorsOf(orphaned);
      return loaded.map((work) => {
        const successor = work.source === null ? successors.get(work.row.sourceStoreId) : undefined;
        if (!successor) return work;
        answeredBy.set(work.row, successor.active.id);
        return { ...work, source: answeringFor(successor.former, successor.active), answersFor: successor.former.id };
      });
    },

    /** The supplier's store, and the reseller's when the order must be read from it first (a manual job). */
    targets: (work) => [
      ...(!work.row.order && work.reseller ? callsTo(ctx, work.reseller, 1) : []),
      ...(work.source ? callsTo(ctx, work.source, supplierCalls(work)) : []),
    ],

    /**
     * The Idempotency-Key is the job's id, not the attempt's: when a worker dies after the platform
     * accepted the order, the next attempt gets the same order back instead of creating a second.
     */
    async perform(work) {
      const { row: job, source, reseller } = work;
      if (!source) throw new JobFailure('the source store was deleted');
      if (!job.order) await refuseTwin(source);
      const manual = job.order ? null : await readResellerOrder(job, reseller);
      const order = job.order ?? manual!.open;
      const supplierOrder = priced(() => buildSupplierOrder(order, source, job.id));
      const platform = ctx.platforms[source.platform];
      // A manual job keeps each different order it sends, before sending it: a later attempt may get it back.
      const sentBefore = manual ? (job.sentOrders ?? []) : [];
      const linesOf = supplierLinesOf(source);
      const sending = manual && !sentBefore.some((sent) => linesOf(sent) === sameLines(supplierOrder.lines)) ? [...sentBefore, manual.read] : sentBefore;
      const send = async (connection: StoreConnection) => {
        if (work.answersFor !== undefined) await refuseSuccessorsJob(job, source);
        if (sending !== sentBefore) await jobs.recordSentOrder(job.id, manual!.read);
        return platform.createOrder(connection, supplierOrder, `sync-job:${job.id}`);
      };
      // One connection for every call to the supplier, holding the turns `targets` reserved for them: a
      // call beyond them (the read after a lookup and a create, or after a 429 voided them) waits for a turn of its own.
      const lookingUp = looksUpFirst(work);
      const connection = { ...connectionOf(ctx, source, supplierCalls(work)), ...(lookingUp && { maxTurnWaitMs: LOOKUP_TURN_WAIT_MS }) };
      const { created, candidates } = await (async () => {
        if (lookingUp) {
          // A lookup cut short by its page bound (a very busy supplier since the job) places the order, as
          // before: failing would leave such a job unplaceable by any retry, for a duplicate that needs a
          // lost answer, an expired key and thousands of orders in between.
          const found = await platform.findOrderByReference(connection, job.id, job.createdAt, 'not_found');
          // Its lines are read when a cancellation needs them, as for an order found after a lost answer.
          // A manual job's: an earlier attempt's order (this read's lines for a job that kept none).
          if (found !== null) return { created: { id: found, status: 200 }, candidates: sentBefore.length > 0 ? sentBefore : manual ? [manual.read] : [] };
          return { created: await send(connection), candidates: sending };
        }
        return { created: await send(connection), candidates: sending };
      })();
      if (manual) placed.set(job, await heldOrder(source, connection, created, candidates, manual.read));
      return created;
    },

    /** A manual job's placement is written in a transaction: it stores the order placed, and the partial cancellations received meanwhile apply to it. */
    outcomeInTransaction: (job) => job.status === 'completed' && placed.has(job),

    async outcomesWrittenIn(trx, rows) {
      const orders = rows.flatMap((job) => {
        const order = job.status === 'completed' ? placed.get(job) : undefined;
        return order ? [{ id: job.id, order, resellerStoreId: job.resellerStoreId, externalOrderId: job.externalOrderId }] : [];
      });
      if (orders.length === 0) return;
      await jobs.recordPlacedOrdersIn(trx, orders);
      await ctx.placedManualJobs.applyToPlacedIn(trx, orders);
    },
  };
}

/** The supplier lines a manual job's read (its open lines) is sent as, compared by `sameLines`; null when it can no longer be priced. */
const supplierLinesOf =
  (source: SourceStore) =>
  (read: ResellerOrder): string | null => {
    try {
      return sameLines(buildSupplierOrder(read, source, '').lines);
    } catch (error) {
      if (error instanceof PricingError) return null;
      throw error;
    }
  };

/** Supplier lines as a comparable key: quantity per SKU. */
function sameLines(lines: { sku: string; quantity: number }[]): string {
  const sums = new Map<string, number>();
  for (const { sku, quantity } of lines) sums.set(sku, (sums.get(sku) ?? 0) + quantity);
  return JSON.stringify([...sums].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Pricing's refusal is an expected failure of the job: its message is kept. */
function priced<T>(build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (error instanceof PricingError) throw new JobFailure(error.message);
    throw error;
  }
}

/** A job's audit entry: every one names the order and the source store. */
export function jobAuditRecord(job: SyncJob, action: string, actorId = SYSTEM_ACTOR, metadata: Record<string, unknown> = {}): AuditRecord {
  return {
    ownerId: job.ownerId,
    resellerStoreId: job.resellerStoreId,
    action,
    resourceType: 'sync_job',
    resourceId: job.id,
    actorId,
    metadata: { externalOrderId: job.externalOrderId, sourceStoreId: job.sourceStoreId, ...metadata },
  };
}

/**
 * The active record through which a job of a deleted record is attempted (`load`), by the job's row as
 * loaded: the worker and the sweep hand that same row to `jobOutcomeAudit`. Read from the loaded work,
 * no query of its own; a row loaded with its own record is absent.
 */
const answeredBy = new WeakMap<SyncJob, string>();

/**
 * The audit entry of a job's completion or death (`reason` when it died other than by failing its last
 * attempt). `sourceStoreId` names the job's own record; a job of a deleted record attempted through the
 * active record that replaced it adds `answeredBySourceStoreId` (that record: its credentials, its pacing).
 */
export const jobOutcomeAudit = (job: SyncJob, reason?: DeathReason): AuditRecord =>
  jobAuditRecord(job, `sync_job.${job.status}`, undefined, {
    attempts: job.attempts,
    ...(job.status === 'completed' ? { sourceOrderId: job.sourceOrderId } : { errorMessage: job.errorMessage }),
    ...(reason && { reason }),
    ...(answeredBy.has(job) && { answeredBySourceStoreId: answeredBy.get(job) }),
  });

/**
 * `sync_job.completed`, `sync_job.failed` (an attempt failed: every failed attempt, events.md) or
 * `sync_job.dead` (no automatic retry is left), with the job's cancellations as the outcome's
 * transaction sees them: a last attempt that failed gives both, `sync_job.failed` first. A job has
 * no fulfillments before it completes (see syncJobEvent).
 */
export const jobOutcomeEvents = (trx: Trx, jobs: SyncJob[]): Promise<NewEvent[]> => syncJobEventsIn(trx, outcomesOf(jobs));

/**
 * The same events built from the jobs alone: as they are for a job with no cancellations (the
 * cancellations feature's `EventRead`, src/workers/kinds.ts, says which have some).
 */
export const jobOutcomeEventsOf = (jobs: SyncJob[]): NewEvent[] => outcomesOf(jobs).map(({ type, job }) => syncJobEvent(type, job));

const outcomesOf = (jobs: SyncJob[]) =>
  jobs.flatMap((job) => {
    if (diedOfFailedAttempt(job)) return [{ type: 'sync_job.failed' as const, job }, { type: 'sync_job.dead' as const, job }];
    return job.status === 'completed' || job.status === 'failed' || job.status === 'dead' ? [{ type: `sync_job.${job.status}` as const, job }] : [];
  });
