import { z } from 'zod';
import { auth, authErrors, c, errorResponse, IdParam, listOf, NullableTimestamp, openApi, pageQuery, RequestId, Timestamp } from './common.ts';

/** The closed set of to-do list entry types (order-changes.md, "The divergence watch"). */
export const DIVERGENCE_TYPES = ['too_late', 'unsupported', 'supplier_cancelled', 'stale', 'cancellation_dead', 'job_dead', 'fulfillment_dead'] as const;
export const DIVERGENCE_STATUSES = ['open', 'resolved', 'dismissed'] as const;

export const DivergenceTypeSchema = z.enum(DIVERGENCE_TYPES).describe(
  [
    '`too_late`: a cancellation reached a supplier that had already shipped; the goods need a return.',
    '`unsupported`: the supplier\'s platform cannot cancel some lines only; handle those lines by hand.',
    '`supplier_cancelled`: the supplier cancelled the order itself (out of stock, say); refund or find another supplier.',
    '`stale`: placed more than STALE_AFTER_MS ago and still no tracking.',
    '`cancellation_dead`, `job_dead`, `fulfillment_dead`: the work failed every automatic attempt; retry it.',
  ].join(' '),
);

const DivergenceFields = openApi(
  z.object({
    id: z.string().describe('`div_…`'),
    object: z.literal('divergence'),
    type: DivergenceTypeSchema,
    status: z.enum(DIVERGENCE_STATUSES).describe('`open` until resolved (a dead job retried and completed, tracking arrived for a stale job) or dismissed.'),
    resellerStoreId: z.string(),
    syncJobId: z.string(),
    externalOrderId: z.string().describe('The storefront order of the entry\'s sync job (its `externalOrderId`), so the entry names the order without another call.'),
    subjectId: z.string().describe('What it is about: the sync job, or its fulfillment (`fulfillment_dead`) or cancellation (`cancellation_dead`).'),
    since: Timestamp.describe('When the divergence was raised.'),
    detail: z.string().nullable().describe('What happened, in words (the last error of dead work, the supplier\'s reason).'),
    resolvedAt: NullableTimestamp,
    dismissedAt: NullableTimestamp,
  }),
  { title: 'Divergence' },
);

const Divergence = openApi(DivergenceFields.extend({ request_id: RequestId }), { title: 'DivergenceResponse' });
const DivergenceCheckStarted = openApi(z.object({ divergenceCheckId: z.string(), request_id: RequestId }), { title: 'DivergenceCheckStarted' });

export const divergencesContract = c.router(
  {
    list: {
      method: 'GET',
      path: '/v1/reseller_stores/:id/divergences',
      pathParams: IdParam,
      query: pageQuery('divergence'),
      responses: { 200: listOf(DivergenceFields, 'DivergenceList'), 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'List the store\'s divergences (the reseller\'s to-do list)',
      description:
        'What needs the reseller and could not be repaired, open entries only, newest first. Every entry but `stale` is written in the same transaction as the change that causes it; `stale` waits for a divergence-watch pass. An entry leaves the list when resolved or dismissed.',
    },
    dismiss: {
      method: 'POST',
      path: '/v1/reseller_stores/:id/divergences/:divergence_id/dismiss',
      pathParams: IdParam.extend({ divergence_id: z.string().min(1).max(64) }),
      body: c.noBody(),
      responses: { 200: Divergence, 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Dismiss a divergence',
      description:
        'Takes the entry off the list and answers it. A dismissed entry is not raised again for the same sync job and type. Dismissing an entry that is no longer open answers it as it is.',
    },
    check: {
      method: 'POST',
      path: '/v1/reseller_stores/:id/divergence_checks',
      pathParams: IdParam,
      body: c.noBody(),
      responses: { 202: DivergenceCheckStarted, 400: errorResponse(400), 404: errorResponse(404), 409: errorResponse(409) },
      summary: 'Run a divergence check now',
      description:
        'Starts a divergence-watch pass over the active store and its suppliers now: their orders updated since each store\'s watermark are listed and compared with what the service believes. 409 `conflict` (reason `divergence_check_in_progress`) while a pass over the store runs.',
    },
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
