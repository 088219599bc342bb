import { z } from 'zod';
import { auth, authErrors, bodyErrors, c, errorResponse, IdParam, listOf, NullableTimestamp, openApi, pageQuery, RequestId, Timestamp } from './common.ts';

const ReconciliationFields = openApi(
  z.object({
    id: z.string(),
    resellerStoreId: z.string(),
    trigger: z.enum(['scheduled', 'manual']).describe('`scheduled` every RECONCILE_INTERVAL_MS, or `manual` (POST …/reconcile).'),
    status: z.enum(['running', 'succeeded', 'failed']).describe('`running` from the request until a worker finishes the run.'),
    since: NullableTimestamp.describe('Orders created since this were listed; null until a worker starts the listing.'),
    startedAt: Timestamp,
    finishedAt: NullableTimestamp,
    ordersSeen: z.number().int().describe(
      'Orders the platform listed that were old enough to reconcile (past the grace period), counted per page routed. A run handed back by a stopping worker (SIGTERM) and taken over by another goes on listing from the second before the newest order it had routed (platform_b\'s whole-second times), so the orders created in that second are counted again: after a take-over this may exceed the distinct orders listed by those few. `ordersRouted` is exact (an order is routed once).',
    ),
    ordersRouted: z.number().int().describe('Orders this run routed because nothing had routed them (each has audit entry `order.reconciled`).'),
    error: z.string().nullable().describe('Why the run failed (the platform\'s answer, a deleted store, an abandoned run); null otherwise.'),
  }),
  { title: 'Reconciliation' },
);

const ReconciliationStarted = openApi(z.object({ reconciliationId: z.string(), request_id: RequestId }), { title: 'ReconciliationStarted' });

export const reconciliationsContract = c.router(
  {
    start: {
      method: 'POST',
      path: '/v1/reseller_stores/:id/reconcile',
      pathParams: IdParam,
      body: z
        .object({
          since: Timestamp.optional().describe('List orders created since this time (at most 30 days back); default: from the store\'s watermark.'),
        })
        .strict()
        .optional(),
      responses: { 202: ReconciliationStarted, 400: errorResponse(400), 404: errorResponse(404), 409: errorResponse(409), ...bodyErrors },
      summary: 'Reconcile a reseller store now',
      description:
        'Starts a reconciliation run of an active reseller store: its platform\'s orders are listed and every one that was not routed (its webhook was lost) and is not cancelled is routed as its webhook would have been. Orders younger than RECONCILE_GRACE_MS are left to their webhook. Send `{}` to list from the store\'s watermark. 409 `conflict` (reason `reconciliation_in_progress`) while a run of the store is in progress; 400 when `since` is in the future or more than 30 days back.',
    },
    list: {
      method: 'GET',
      path: '/v1/reseller_stores/:id/reconciliations',
      pathParams: IdParam,
      query: pageQuery('reconciliation'),
      responses: { 200: listOf(ReconciliationFields, 'ReconciliationList'), 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'List reconciliation runs',
      description: 'Reconciliation runs of a reseller store (also a deleted one), scheduled and manual, newest first.',
    },
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
