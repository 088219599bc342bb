import { z } from 'zod';
import { ATTEMPT_OUTCOMES, ATTEMPT_TRIGGERS, CANCELLATION_OUTCOMES, CANCELLATION_SCOPES, CANCELLATION_STATUSES, FULFILLMENT_STATUSES, SYNC_JOB_STATUSES } from './enums.ts';
import { EXTERNAL_ORDER_ID, MAX_NUMERIC_ORDER_ID_DIGITS } from './limits.ts';
import { auth, authErrors, bodyErrors, c, errorResponse, FilterTimestamp, IdParam, listOf, openApi, NullableTimestamp, pageQuery, RequestId, Timestamp } from './common.ts';

const SyncJobStatusSchema = z
  .enum(SYNC_JOB_STATUSES)
  .describe('`pending` → `processing` → `completed`, or `failed` and retried automatically, then `dead` until retried by hand.');

const FulfillmentStatusSchema = z
  .enum(FULFILLMENT_STATUSES)
  .describe(
    'As a sync job: `pending` → `processing` → `completed`, or `failed` and retried automatically, then `dead`. `skipped`: not sent and never retried, `errorMessage` says why (tracking without a number for a reseller platform that needs one).',
  );

const ExchangeRequest = z.object({
  method: z.string().describe('`GET`, `POST` or `PUT`.'),
  path: z.string().describe('The path and query below the store\'s base URL.'),
  body: z.string().nullable().describe('The JSON body sent, redacted and cut at 2 KiB (with a `… [cut: N more bytes]` marker); null for a call without one.'),
});

const ExchangeResponse = z.object({
  status: z.number().int().describe('The HTTP status the platform answered with.'),
  body: z.string().nullable().describe('The start of the body, redacted and cut at 2 KiB (with a `… [cut: N more bytes]` marker); null when empty.'),
});

/** When a failed unit of work's automatic retry is due. */
const NextRetryAt = NullableTimestamp.describe(
  'When the automatic retry scheduled after the last failed attempt is due (it may run a little later when the store is busy); null unless `failed`.',
);

/** One attempt in a timeline; sync jobs and fulfillments add the id a successful attempt produced. */
const AttemptFields = z.object({
  attempt: z.number().int().describe('1 for the first attempt; manual retries keep counting.'),
  trigger: z
    .enum(ATTEMPT_TRIGGERS)
    .describe('What started the attempt; `recovered`: the previous attempt\'s worker was lost and the job was taken again.'),
  startedAt: Timestamp,
  finishedAt: NullableTimestamp,
  durationMs: z.number().int().nullable().describe('Null while in progress.'),
  outcome: z.enum(ATTEMPT_OUTCOMES),
  errorMessage: z.string().nullable(),
  platformStatus: z.number().int().nullable().describe('The HTTP status the platform answered with; null when no answer came or no call was made.'),
  request: ExchangeRequest.nullable().describe(
    'An excerpt of what the attempt\'s last platform call sent: the store\'s access token, secret fields (tokens, secrets, passwords, signatures) and the customer\'s personal data (emails, phone numbers, names, addresses) are replaced by `[redacted]`; headers are never kept. Null while in progress, when no call was made, and for attempts recorded before excerpts were kept.',
  ),
  response: ExchangeResponse.nullable().describe('An excerpt of what came back to that call, redacted the same way; null when no answer came (a timeout) or no call was made.'),
});

const SyncJobAttempt = openApi(AttemptFields.extend({
  sourceOrderId: z.string().nullable().describe('The order the attempt placed on the source store, when it succeeded.'),
}), { title: 'SyncJobAttempt' });

const FulfillmentAttempt = openApi(AttemptFields.extend({
  resellerFulfillmentId: z.string().nullable().describe('The fulfillment the attempt created on the reseller order, when it succeeded.'),
}), { title: 'FulfillmentAttempt' });

export const FulfillmentSchema = openApi(z.object({
  id: z.string(),
  syncJobId: z.string().describe('The sync job whose order the tracking belongs to.'),
  status: FulfillmentStatusSchema,
  attempts: z.number().int(),
  trackingNumbers: z.array(z.string()),
  trackingUrls: z.array(z.string()),
  trackingCompany: z.string().nullable(),
  resellerFulfillmentId: z.string().nullable(),
  errorMessage: z.string().nullable(),
  completedAt: NullableTimestamp,
  deadAt: NullableTimestamp,
  nextRetryAt: NextRetryAt,
  createdAt: Timestamp,
  timeline: z.array(FulfillmentAttempt).describe('The fulfillment\'s attempts, oldest first.'),
}), { title: 'Fulfillment' });

const CancellationAttempt = openApi(AttemptFields.extend({
  cancellationOutcome: z.enum(CANCELLATION_OUTCOMES).nullable().describe('The outcome the attempt reached, when it succeeded.'),
}), { title: 'CancellationAttempt' });

export const CancellationSchema = openApi(z.object({
  id: z.string().describe('`can_…`'),
  status: z
    .enum(CANCELLATION_STATUSES)
    .describe('`completed`: an outcome was reached, whatever it is. `failed` (retried automatically) and `dead` (after the last automatic retry; retry by hand): no outcome could be reached.'),
  outcome: z
    .enum(CANCELLATION_OUTCOMES)
    .nullable()
    .describe('`cancelled`: the supplier accepted. `not_placed`: no supplier order exists (the job was never placed, or placed without these lines). `too_late`: the supplier had already shipped: the goods need a return. `unsupported`: the supplier\'s platform cannot cancel some lines only: handle them by hand. Null until completed.'),
  scope: z.enum(CANCELLATION_SCOPES).describe('`order`: the whole supplier order; `lines`: some of its lines.'),
  lines: z.array(z.object({ sku: z.string(), quantity: z.number().int() })).describe('The supplier lines cancelled, by the SKU the service placed them with.'),
  reason: z.string().nullable().describe('What the outcome needs said: the shipped lines of a `too_late`, the lines to handle by hand of an `unsupported`. Null until an outcome is reached.'),
  attempts: z.number().int(),
  errorMessage: z.string().nullable().describe('Why the last attempt failed; cleared on retry.'),
  requestedAt: Timestamp,
  completedAt: NullableTimestamp,
  nextRetryAt: NextRetryAt,
  timeline: z.array(CancellationAttempt).describe('The cancellation\'s attempts, oldest first.'),
}), { title: 'Cancellation' });

/** A storefront order id as the service keeps it (a job's, an order event's `externalOrderId`). */
export const ExternalOrderId = z
  .string()
  .describe('Order id on the reseller platform, 1 to 32 ASCII letters, digits, `_` and `-`: on platform_a and platform_b, whose order ids are numbers, its digits without leading zeros (`1001`); on a custom storefront, its string id as the storefront gave it (`SO-1001`).');

const SyncJobFields = openApi(z.object({
  id: z.string(),
  resellerStoreId: z.string(),
  sourceStoreId: z.string(),
  status: SyncJobStatusSchema,
  attempts: z.number().int().describe('Processing attempts so far; 0 on a new job.'),
  externalOrderId: ExternalOrderId,
  sourceOrderId: z.string().nullable().describe('Order id on the source store, once placed.'),
  errorMessage: z.string().nullable().describe('Why the last attempt failed; cleared on retry.'),
  completedAt: NullableTimestamp,
  failedAt: NullableTimestamp,
  deadAt: NullableTimestamp,
  nextRetryAt: NextRetryAt,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  supplierCancelledAt: NullableTimestamp.describe('When the supplier cancelled the order the service placed, on its own; null otherwise. The storefront order is not changed.'),
  supplierCancelReason: z.string().nullable().describe('The reason the supplier gave, when it gave one.'),
}), { title: 'SyncJobSummary' });

/** A sync job as `GET /v1/sync_jobs/{id}` shows it; also the `data.object` of `sync_job.*` events. */
export const SyncJobDetail = openApi(SyncJobFields.extend({
  fulfillments: z.array(FulfillmentSchema).describe('Tracking pushed back to the reseller order, oldest first.'),
  cancellations: z.array(CancellationSchema).describe('Cancellations of the supplier order (or some of its lines), oldest first; empty when none.'),
}), { title: 'SyncJobDetail' });

export const SyncJob = openApi(SyncJobDetail.extend({ request_id: RequestId }), { title: 'SyncJob' });

const RetryableStatus = z.enum(['dead', 'failed']);

export const BULK_RETRY_LIMIT = 1000;

const BulkRetryResult = openApi(z.object({
  object: z.literal('bulk_retry'),
  retried: z.number().int().describe(`Jobs retried by this call, at most ${BULK_RETRY_LIMIT}.`),
  syncJobIds: z.array(z.string()).describe('The jobs retried, oldest first.'),
  has_more: z.boolean().describe('More jobs match the filters: call again to retry the next ones.'),
  request_id: RequestId,
}), { title: 'BulkRetryResult' });

/**
 * `POST /v1/sync_jobs/{id}/{part}/{partId}/retry`: the manual retry of one of a job's failed or dead
 * fulfillments or cancellations, answered with the job (the contracts of contract/fulfillments.ts
 * and contract/cancellations.ts). Each kind's route says what its retry does in `doc`.
 */
export function jobPartRetry<const Part extends string, const Param extends string>(part: Part, param: Param, doc: { summary: string; description: string }) {
  return {
    method: 'POST',
    path: `/v1/sync_jobs/:id/${part}/:${param}/retry`,
    pathParams: IdParam.extend({ [param]: z.string().min(1).max(64) } as Record<Param, z.ZodString>),
    body: c.noBody(),
    responses: { 200: SyncJob, 400: errorResponse(400), 404: errorResponse(404) },
    ...doc,
  } as const;
}

export const syncJobsContract = c.router(
  {
    create: {
      method: 'POST',
      path: '/v1/sync_jobs',
      body: z.object({
        source_store_id: z.string().min(1).max(64),
        external_order_id: z
          .string()
          .regex(EXTERNAL_ORDER_ID, 'must be an order id: 1 to 32 letters, digits, "_" or "-"')
          .describe(
            `The order's id on the reseller platform: 1 to 32 ASCII letters, digits, \`_\` and \`-\`. On platform_a and platform_b, whose order ids are numbers, it must be 1 to ${MAX_NUMERIC_ORDER_ID_DIGITS} digits (anything else is 400 \`validation_failed\`) and leading zeros are dropped (\`01001\` is order 1001, and 0 is refused); a custom storefront's id is a string (e.g. \`SO-1001\`), kept as given.`,
          ),
      }).strict(),
      responses: { 201: SyncJob, 200: SyncJob, 400: errorResponse(400), 409: errorResponse(409), ...bodyErrors },
      summary: 'Create a sync job',
      description:
        'Places the source store\'s part of a reseller order. Idempotent: when a job already exists for the order and source store, it is returned with 200, also after the source store was deleted (a new job needs an active source store: an unknown, another user\'s or a deleted one is 400 `validation_failed` on `source_store_id`). ' +
        'A source store whose vendor tag matches the same lines as another active source store\'s of its reseller store (two suppliers added before vendor tags were compared in their folded form, e.g. `Straße` and `STRAẞE`) gets no new job: 409 `conflict`, `details.reason` `vendor_tag_ambiguous`, `details.sourceStoreIds` naming the suppliers that share the tag, since a job for each would place the same lines twice. Routing places such lines on neither and reports them (`order.unmatched`). Delete one of the two, then create the job. A job that existed before is still returned, and places nothing while both are active (it fails with the reason, then is `dead`, until a retry after the deletion).',
    },
    list: {
      method: 'GET',
      path: '/v1/sync_jobs',
      query: pageQuery('syncJob').extend({
        status: SyncJobStatusSchema.optional(),
        reseller_store_id: z.string().max(64).optional(),
        source_store_id: z.string().max(64).optional(),
        external_order_id: z
          .string()
          .max(32)
          .optional()
          .describe('The order\'s id as `POST /v1/sync_jobs` reads it: on platform_a and platform_b storefronts leading zeros are dropped (`01001` finds order 1001), on a custom storefront the id is matched as given.'),
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
    attempts: {
      method: 'GET',
      path: '/v1/sync_jobs/:id/attempts',
      pathParams: IdParam,
      responses: { 200: listOf(SyncJobAttempt, 'SyncJobAttemptList'), 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'A sync job\'s timeline',
      description:
        'Every attempt at the job, oldest first (the whole timeline, never paged: `has_more` is false): what started it, when, how long it took, its outcome, the platform\'s HTTP status and the order it placed. Attempts made before a manual retry and attempts whose worker was lost are kept.',
    },
    bulkRetry: {
      method: 'POST',
      path: '/v1/sync_jobs/bulk_retry',
      body: z
        .object({
          status: z.union([RetryableStatus, z.array(RetryableStatus).min(1).max(2)]).describe('`dead`, `failed`, or both as a list.'),
          reseller_store_id: z.string().min(1).max(64).optional(),
          source_store_id: z.string().min(1).max(64).optional(),
          created_after: FilterTimestamp({ offset: true }).optional().describe('Only jobs created after this time (ISO-8601, any UTC offset).'),
          created_before: FilterTimestamp({ offset: true }).optional().describe('Only jobs created before this time (ISO-8601, any UTC offset).'),
        })
        // A misspelt filter must not silently widen what gets retried.
        .strict(),
      responses: { 200: BulkRetryResult, 400: errorResponse(400), ...bodyErrors },
      summary: 'Retry matching sync jobs',
      description: `Retries up to ${BULK_RETRY_LIMIT} of the current user's jobs with the given statuses and filters, oldest first, each exactly as \`POST /v1/sync_jobs/{id}/retry\` does (audited as \`sync_job.retried\` with \`metadata.bulk = true\`). A job that changed status meanwhile is skipped, not an error. When \`has_more\` is true, call again for the next ones.`,
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
