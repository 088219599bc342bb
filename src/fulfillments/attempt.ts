import type { AttemptEntry } from '../attempts/entity.ts';
import { findAttemptsIn } from '../attempts/repository.ts';
import type { Trx } from '../db/sql.ts';
import type { NewEvent } from '../events/types.ts';
import { SYSTEM_ACTOR, type AuditRecord } from '../audit-log/repository.ts';
import { UNBOOKED_CALL_TURN_WAIT_MS, type Attempt, type DeathReason } from '../attempts/kind.ts';
import { JobFailure } from '../attempts/failure.ts';
import { connectionOf, callsTo } from '../attempts/store-connection.ts';
import type { Logger } from 'pino';
import type { SharedPacer } from '../pacing/pacer.ts';
import type { OrderFulfillment, PlatformAdapters } from '../platforms/types.ts';
import type { Tracking } from '../orders/types.ts';
import type { SecretBox } from '../shared/secrets.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { Fulfillment } from './entity.ts';
import { fulfillmentEvent } from './events.ts';
import type { ResellerStoreReads, SyncJobReads } from './ports.ts';
import type { FulfillmentRepository } from './repository.ts';

/** What a fulfillment's attempt needs, built once per process (src/workers/kinds.ts hands them over). */
export interface FulfillmentAttemptDeps {
  fulfillments: FulfillmentRepository;
  syncJobReads: SyncJobReads;
  resellerStoreReads: ResellerStoreReads;
  platforms: PlatformAdapters;
  secrets: SecretBox;
  pacer: SharedPacer;
  logger: Logger;
}

/** A fulfillment and the reseller store it adds the tracking to, unless that store was deleted. */
export interface FulfillmentWork {
  row: Fulfillment;
  reseller: ResellerStore | null;
}

/** One attempt of a fulfillment: add the supplier's tracking to the reseller order, notifying the customer. */
export function propagateTracking(ctx: FulfillmentAttemptDeps): Attempt<FulfillmentWork> {
  const fulfillments = ctx.fulfillments;
  const jobs = ctx.syncJobReads;

  return {
    async load(ids) {
      const rows = await fulfillments.findByIds(ids);
      const resellerIds = [...new Set(rows.map((row) => row.resellerStoreId))];
      const resellers = await ctx.resellerStoreReads.findActiveByIds(resellerIds);
      return rows.map((row) => ({ row, reseller: resellers.find((store) => store.id === row.resellerStoreId) ?? null }));
    },

    /**
     * One turn per call (platform_b takes one tracking number per call), but at most
     * TURNS_BOOKED_AHEAD booked before the attempt: the rest are reserved call by call as it goes,
     * so a large fulfillment takes its turns among other suppliers' instead of ahead of them all.
     */
    targets: ({ row, reseller }) =>
      reseller ? callsTo(ctx, reseller, turnsBookedAhead(ctx, reseller, row) + (checksOrderFirst(row) ? 1 : 0)) : [],

    unbookedCalls: ({ row, reseller }) => (reseller ? ctx.platforms[reseller.platform].fulfillmentCalls(row.tracking) - turnsBookedAhead(ctx, reseller, row) : 0),

    /**
     * Keyed by our fulfillment id, so a retry after a crash cannot add the tracking twice. A later
     * attempt past the platforms' Idempotency-Key window reads the order's fulfillments first: an
     * earlier attempt whose answer was lost may have added the tracking already (`stillToPush`).
     */
    async perform({ row: fulfillment, reseller }) {
      const job = await jobs.findById(fulfillment.syncJobId);
      if (!job) throw new JobFailure('the sync job no longer exists');
      if (!reseller) throw new JobFailure('the reseller store was deleted');
      const checksFirst = checksOrderFirst(fulfillment);
      // The calls past the booked ones wait for their turns among other attempts' (a backlog), not fail unsent.
      const connection = {
        ...connectionOf(ctx, reseller, turnsBookedAhead(ctx, reseller, fulfillment) + (checksFirst ? 1 : 0)),
        maxTurnWaitMs: UNBOOKED_CALL_TURN_WAIT_MS,
      };
      const platform = ctx.platforms[reseller.platform];
      try {
        let tracking = fulfillment.tracking;
        if (checksFirst) {
          const left = stillToPush(tracking, await platform.listOrderFulfillments(connection, job.externalOrderId));
          if ('found' in left) {
            ctx.logger.info({ fulfillment_id: fulfillment.id, reseller_fulfillment_id: left.found }, 'tracking already on the storefront order: not pushed again');
            return { id: left.found, status: 200 };
          }
          tracking = left.tracking;
        }
        return await platform.createFulfillment(connection, job.externalOrderId, tracking, `fulfillment:${fulfillment.id}`);
      } finally {
        // A failed attempt's booked turns that no call spent go back to the store (after a 429 they were voided already).
        await ctx.pacer
          .release({ storeId: connection.storeId, platform: reseller.platform }, connection.heldTurns?.remaining ?? 0)
          .catch((error: unknown) => ctx.logger.warn({ err: error, reseller_store_id: reseller.id }, 'could not give back unused turns'));
      }
    },
  };
}

/**
 * Platforms keep an Idempotency-Key 24 hours (platforms.md), as for a sync job's placement
 * (src/sync-jobs/attempt.ts): a later attempt of a fulfillment older than this cannot count on it
 * to replay a push whose answer was lost, so it reads what the order shows first.
 */
const IDEMPOTENCY_TRUSTED_MS = 12 * 60 * 60_000;

/** Whether this attempt reads the order's fulfillments before pushing (a retry, past the key's trusted window). */
const checksOrderFirst = (fulfillment: Fulfillment): boolean => fulfillment.attempts > 1 && Date.now() - fulfillment.createdAt.getTime() > IDEMPOTENCY_TRUSTED_MS;

/**
 * What of `tracking` the order does not show yet. Its numbers all shown: `found`, the id of the
 * fulfillment showing the first (nothing is pushed, the customer is not notified again). Some shown
 * (platform_b takes one number per call, and an attempt may have pushed some before its answer was
 * lost): the others, their links with them when there is one per number. Tracking without numbers
 * is recognised by its links. Nothing shown: all of it.
 */
export function stillToPush(tracking: Tracking, shown: OrderFulfillment[]): { found: string } | { tracking: Tracking } {
  const idOf = (fulfillment: OrderFulfillment | undefined) => fulfillment?.id ?? 'already-on-order';
  if (tracking.numbers.length === 0) {
    const urls = new Set(tracking.urls);
    const same = urls.size > 0 ? shown.find((f) => f.trackingNumbers.length === 0 && f.trackingUrls.length === urls.size && f.trackingUrls.every((url) => urls.has(url))) : undefined;
    return same ? { found: idOf(same) } : { tracking };
  }
  const onOrder = new Set(shown.flatMap((f) => f.trackingNumbers));
  const missing = tracking.numbers.flatMap((number, index) => (onOrder.has(number) ? [] : [{ number, index }]));
  if (missing.length === 0) return { found: idOf(shown.find((f) => f.trackingNumbers.includes(tracking.numbers[0]!))) };
  if (missing.length === tracking.numbers.length) return { tracking };
  const urls = tracking.urls.length === tracking.numbers.length ? missing.map(({ index }) => tracking.urls[index]!) : tracking.urls;
  return { tracking: { ...tracking, numbers: missing.map(({ number }) => number), urls } };
}

/** The most turns of the reseller store one fulfillment attempt books before it starts. */
export const TURNS_BOOKED_AHEAD = 4;

function turnsBookedAhead(ctx: Pick<FulfillmentAttemptDeps, 'platforms'>, reseller: ResellerStore, fulfillment: Fulfillment): number {
  return Math.min(TURNS_BOOKED_AHEAD, ctx.platforms[reseller.platform].fulfillmentCalls(fulfillment.tracking));
}

/** A fulfillment's audit entry: every one names its sync job. */
export function fulfillmentAuditRecord(fulfillment: Fulfillment, action: string, metadata: Record<string, unknown> = {}): AuditRecord {
  return {
    ownerId: fulfillment.ownerId,
    resellerStoreId: fulfillment.resellerStoreId,
    action,
    resourceType: 'fulfillment',
    resourceId: fulfillment.id,
    actorId: SYSTEM_ACTOR,
    metadata: { syncJobId: fulfillment.syncJobId, ...metadata },
  };
}

/** The audit entry of a fulfillment's completion or death (`reason` when it died other than by failing its last attempt). */
export const fulfillmentOutcomeAudit = (fulfillment: Fulfillment, reason?: DeathReason): AuditRecord =>
  fulfillmentAuditRecord(fulfillment, `fulfillment.${fulfillment.status}`, {
    attempts: fulfillment.attempts,
    errorMessage: fulfillment.errorMessage,
    ...(reason && { reason }),
  });

/**
 * Integrators hear of a fulfillment's completion (tracking reached the customer) and of its death,
 * the fulfillment with its timeline as its job's GET shows it: the outcome's entry just written included.
 */
export async function fulfillmentOutcomeEvents(trx: Trx, fulfillments: Fulfillment[]): Promise<NewEvent[]> {
  const settled = fulfillments.filter((fulfillment) => fulfillment.status === 'completed' || fulfillment.status === 'dead');
  if (settled.length === 0) return [];
  const timelines = new Map<string, AttemptEntry[]>(settled.map((fulfillment) => [fulfillment.id, []]));
  for (const entry of await findAttemptsIn(trx, [...timelines.keys()])) timelines.get(entry.rowId)?.push(entry);
  return settled.map((fulfillment) => fulfillmentEvent(`fulfillment.${fulfillment.status as 'completed' | 'dead'}`, fulfillment, timelines.get(fulfillment.id)!));
}
