import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { BULK_RETRY_LIMIT } from '../../contract/sync-jobs.ts';
import { principalOf } from '../auth/principal.ts';
import { listBody } from '../http/list.ts';
import { withRequestId } from '../http/request-id.ts';
import { presentAttempt } from '../attempts/present.ts';
import { presentDetail, presentSyncJob } from './present.ts';
import type { SyncJobService } from './service.ts';

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
