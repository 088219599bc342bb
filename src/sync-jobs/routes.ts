import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { BULK_RETRY_LIMIT } from '../../contract/sync-jobs.ts';
import { principalOf } from '../auth/principal.ts';
import type { Fulfillment } from '../fulfillments/entity.ts';
import { listBody } from '../http/list.ts';
import { withRequestId } from '../http/request-id.ts';
import { iso, isoOrNull } from '../shared/time.ts';
import type { AttemptEntry } from '../attempts/entity.ts';
import type { SyncJob } from './entity.ts';
import { presentCancellation } from '../cancellations/presenter.ts';
import type { JobWithFulfillments, SyncJobService } from './service.ts';

function presentSyncJob(job: SyncJob) {
  return {
    id: job.id,
    resellerStoreId: job.resellerStoreId,
    sourceStoreId: job.sourceStoreId,
    status: job.status,
    attempts: job.attempts,
    externalOrderId: job.externalOrderId,
    sourceOrderId: job.sourceOrderId ?? null,
    errorMessage: job.errorMessage ?? null,
    completedAt: isoOrNull(job.completedAt),
    failedAt: isoOrNull(job.failedAt),
    deadAt: isoOrNull(job.deadAt),
    createdAt: iso(job.createdAt),
    updatedAt: iso(job.updatedAt),
    supplierCancelledAt: isoOrNull(job.supplierCancelledAt),
    supplierCancelReason: job.supplierCancelReason ?? null,
  };
}

/** A timeline entry; `resultKey` names what a successful attempt produced. */
function presentAttempt<K extends string>(entry: AttemptEntry, resultKey: K) {
  return {
    attempt: entry.attempt,
    trigger: entry.trigger,
    startedAt: iso(entry.startedAt),
    finishedAt: isoOrNull(entry.finishedAt),
    durationMs: entry.finishedAt ? entry.finishedAt.getTime() - entry.startedAt.getTime() : null,
    outcome: entry.outcome,
    errorMessage: entry.errorMessage ?? null,
    platformStatus: entry.platformStatus ?? null,
    ...({ [resultKey]: entry.result ?? null } as Record<K, string | null>),
  };
}

/** A fulfillment as its job's GET shows it (also the `data.object` of its events). */
export function presentFulfillment(fulfillment: Fulfillment, attempts: AttemptEntry[]) {
  return {
    id: fulfillment.id,
    syncJobId: fulfillment.syncJobId,
    status: fulfillment.status,
    attempts: fulfillment.attempts,
    trackingNumbers: fulfillment.tracking.numbers,
    trackingUrls: fulfillment.tracking.urls,
    trackingCompany: fulfillment.tracking.company,
    resellerFulfillmentId: fulfillment.resellerFulfillmentId ?? null,
    errorMessage: fulfillment.errorMessage ?? null,
    completedAt: isoOrNull(fulfillment.completedAt),
    deadAt: isoOrNull(fulfillment.deadAt),
    createdAt: iso(fulfillment.createdAt),
    timeline: attempts.map((entry) => presentAttempt(entry, 'resellerFulfillmentId')),
  };
}

/** A job as its GET shows it (also the `data.object` of its events). */
export const presentDetail = ({ job, fulfillments, fulfillmentAttempts, cancellations = [] }: JobWithFulfillments) => ({
  ...presentSyncJob(job),
  fulfillments: fulfillments.map((fulfillment) => presentFulfillment(fulfillment, fulfillmentAttempts.get(fulfillment.id) ?? [])),
  cancellations: cancellations.map(presentCancellation),
});

export function syncJobRoutes(jobs: SyncJobService) {
  const s = initServer();
  return s.router(contract.syncJobs, {
    create: async ({ body, req }) => {
      const { created, ...detail } = await jobs.createManual(principalOf(req), body.source_store_id, body.external_order_id);
      return { status: created ? 201 : 200, body: withRequestId(req, presentDetail(detail)) };
    },
    list: async ({ query, req }) => ({
      status: 200,
      body: listBody(req, await jobs.list(principalOf(req), query), presentSyncJob),
    }),
    get: async ({ params, req }) => ({
      status: 200,
      body: withRequestId(req, presentDetail(await jobs.get(principalOf(req), params.id))),
    }),
    attempts: async ({ params, req }) => ({
      status: 200,
      body: listBody(req, { data: await jobs.attempts(principalOf(req), params.id), has_more: false }, (entry) => presentAttempt(entry, 'sourceOrderId')),
    }),
    bulkRetry: async ({ body, req }) => {
      const { retriedIds, hasMore } = await jobs.bulkRetry(
        principalOf(req),
        {
          statuses: [body.status].flat(),
          resellerStoreId: body.reseller_store_id,
          sourceStoreId: body.source_store_id,
          createdAfter: body.created_after === undefined ? undefined : new Date(body.created_after),
          createdBefore: body.created_before === undefined ? undefined : new Date(body.created_before),
        },
        BULK_RETRY_LIMIT,
      );
      return {
        status: 200,
        body: withRequestId(req, { object: 'bulk_retry' as const, retried: retriedIds.length, syncJobIds: retriedIds, has_more: hasMore }),
      };
    },
    retry: async ({ params, req }) => ({
      status: 200,
      body: withRequestId(req, presentDetail(await jobs.retry(principalOf(req), params.id))),
    }),
  });
}
