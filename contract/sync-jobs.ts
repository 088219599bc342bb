import { z } from 'zod';
import { ATTEMPT_STATUSES } from './enums.ts';
import { auth, authErrors, bodyErrors, c, errorResponse, IdParam, listOf, openApi, NullableTimestamp, PageQuery, RequestId, Timestamp } from './common.ts';

/** A sync job's and a fulfillment's status: both are retried work with one lifecycle. */
const AttemptStatusSchema = z.enum(ATTEMPT_STATUSES);

const FulfillmentSchema = openApi(z.object({
  id: z.string(),
  status: AttemptStatusSchema,
  attempts: z.number().int(),
  trackingNumbers: z.array(z.string()),
  trackingUrls: z.array(z.string()),
  trackingCompany: z.string().nullable(),
  resellerFulfillmentId: z.string().nullable(),
  errorMessage: z.string().nullable(),
  completedAt: NullableTimestamp,
  deadAt: NullableTimestamp,
  createdAt: Timestamp,
}), { title: 'Fulfillment' });

const SyncJobFields = openApi(z.object({
  id: z.string(),
  resellerStoreId: z.string(),
  sourceStoreId: z.string(),
  status: AttemptStatusSchema,
  attempts: z.number().int().describe('Processing attempts so far; 0 on a new job.'),
  externalOrderId: z.string().describe('Numeric order id on the reseller platform.'),
  sourceOrderId: z.string().nullable().describe('Order id on the source store, once placed.'),
  errorMessage: z.string().nullable().describe('Why the last attempt failed; cleared on retry.'),
  completedAt: NullableTimestamp,
  failedAt: NullableTimestamp,
  deadAt: NullableTimestamp,
  createdAt: Timestamp,
  updatedAt: Timestamp,
}), { title: 'SyncJobSummary' });

const SyncJob = openApi(SyncJobFields.extend({
  fulfillments: z.array(FulfillmentSchema).describe('Tracking pushed back to the reseller order, oldest first.'),
  request_id: RequestId,
}), { title: 'SyncJob' });

export const syncJobsContract = c.router(
  {
    create: {
      method: 'POST',
      path: '/v1/sync_jobs',
      body: z.object({
        source_store_id: z.string().min(1).max(64),
        external_order_id: z.string().regex(/^\d{1,20}$/, 'must be a numeric order id'),
      }),
      responses: { 201: SyncJob, 200: SyncJob, 400: errorResponse(400), ...bodyErrors },
      summary: 'Create a sync job',
      description:
        'Places the source store\'s part of a reseller order. Idempotent: when a job already exists for the order and source store, it is returned with 200.',
    },
    list: {
      method: 'GET',
      path: '/v1/sync_jobs',
      query: PageQuery.extend({
        status: AttemptStatusSchema.optional(),
        reseller_store_id: z.string().max(64).optional(),
        source_store_id: z.string().max(64).optional(),
        external_order_id: z.string().max(32).optional(),
      }),
      responses: { 200: listOf(SyncJobFields, 'SyncJobList'), 400: errorResponse(400) },
      summary: 'List sync jobs',
      description: 'Sync jobs of the current user\'s stores, newest first, with optional filters.',
    },
    get: {
      method: 'GET',
      path: '/v1/sync_jobs/:id',
      pathParams: IdParam,
      responses: { 200: SyncJob, 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Get a sync job',
      description: 'One sync job with the fulfillments propagated for it.',
    },
    retry: {
      method: 'POST',
      path: '/v1/sync_jobs/:id/retry',
      pathParams: IdParam,
      body: c.noBody(),
      responses: { 200: SyncJob, 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Retry a failed or dead sync job',
      description:
        'Resets the job to pending, clears its error fields and grants three automatic retries again; `attempts` keeps counting. Any other status answers 400 `sync_job_not_retryable`, so of concurrent retries of one job exactly one succeeds and the others get that 400.',
    },
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
