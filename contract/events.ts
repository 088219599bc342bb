import { z } from 'zod';
import { auth, authErrors, c, errorResponse, FilterTimestamp, IdParam, listOf, openApi, pageQuery, RequestId, Timestamp } from './common.ts';
import { ExternalOrderId, FulfillmentSchema, SyncJobDetail } from './sync-jobs.ts';

/** The closed set of event types (events.md). `ping` is only ever sent by an endpoint's test. */
export const SYNC_JOB_EVENT_TYPES = ['sync_job.created', 'sync_job.completed', 'sync_job.failed', 'sync_job.dead', 'sync_job.retried', 'sync_job.stale'] as const;
export const FULFILLMENT_EVENT_TYPES = ['fulfillment.completed', 'fulfillment.dead', 'fulfillment.reconciled'] as const;
/** After routing (order-changes.md): events whose `data.object` is the sync job with its `cancellations`. */
export const CANCELLATION_EVENT_TYPES = [
  'cancellation.completed',
  'cancellation.too_late',
  'cancellation.unsupported',
  'cancellation.dead',
  'cancellation.retried',
  'sync_job.supplier_cancelled',
] as const;
export const EVENT_TYPES = [...SYNC_JOB_EVENT_TYPES, ...FULFILLMENT_EVENT_TYPES, 'order.unmatched', 'order.reconciled', 'order.cancelled', ...CANCELLATION_EVENT_TYPES, 'ping'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const EventTypeSchema = z.enum(EVENT_TYPES).describe(
  [
    '`sync_job.created`: a job was created (by an order webhook, reconciliation or the API).',
    '`sync_job.completed`: its order was placed on the source store.',
    '`sync_job.failed`: an attempt failed (one event per failed attempt, the last one included: then the object is already `dead`, and `sync_job.dead` follows).',
    '`sync_job.dead`: no automatic attempt is left (the last one failed, or the job\'s queue message could not be delivered); the job waits for a manual retry.',
    '`sync_job.retried`: a failed or dead job was retried by hand.',
    '`fulfillment.completed`: tracking reached the reseller order (the customer was notified).',
    '`fulfillment.dead`: tracking could not be added after every automatic attempt.',
    '`fulfillment.reconciled`: the divergence watch found tracking at the supplier that no webhook brought, and queued it for the reseller order.',
    '`sync_job.stale`: the job\'s supplier order was placed more than STALE_AFTER_MS ago and has no tracking yet (once per job).',
    '`order.unmatched`: an order had lines no active source store matched, or more than one did (once per order).',
    '`order.reconciled`: an order was routed by reconciliation because its webhook never came.',
    '`order.cancelled`: a storefront cancellation (whole order or some lines) was received.',
    '`cancellation.completed`: a cancellation reached its outcome (`cancelled`, `not_placed`, `too_late` or `unsupported`).',
    '`cancellation.too_late`: the supplier had already shipped (some of) it: the goods need a return; also raised when a fulfillment arrives for a cancelled part.',
    '`cancellation.unsupported`: the supplier\'s platform cannot cancel some lines only: they need handling by hand.',
    '`cancellation.dead`: a cancellation failed every automatic attempt; it waits for a manual retry.',
    '`cancellation.retried`: a failed or dead cancellation was retried by hand.',
    '`sync_job.supplier_cancelled`: the supplier cancelled the order the service placed, on its own.',
    '`ping`: sent only by `POST /v1/webhook_endpoints/{id}/test`.',
  ].join(' '),
);

const eventFields = {
  id: z.string().describe('`evt_…`; also the `webhook-id` header of every delivery of this event. De-duplicate on it.'),
  object: z.literal('event'),
  createdAt: Timestamp,
};

const storeEvent = <T extends readonly [string, ...string[]], O extends z.ZodTypeAny>(title: string, types: T, object: O, description: string) =>
  openApi(
    z.object({
      ...eventFields,
      type: z.enum(types),
      resellerStoreId: z.string().describe('The reseller store the event is about.'),
      data: z.object({ object: object }),
    }),
    { title, description },
  );

export const SyncJobEventSchema = storeEvent(
  'SyncJobEvent',
  SYNC_JOB_EVENT_TYPES,
  SyncJobDetail,
  '`data.object` is the sync job exactly as `GET /v1/sync_jobs/{id}` returned it at the moment of the change.',
);

export const FulfillmentEventSchema = storeEvent(
  'FulfillmentEvent',
  FULFILLMENT_EVENT_TYPES,
  FulfillmentSchema,
  '`data.object` is the fulfillment as it appears in its sync job\'s `fulfillments` at the moment of the change.',
);

export const CancellationEventSchema = storeEvent(
  'CancellationEvent',
  CANCELLATION_EVENT_TYPES,
  SyncJobDetail,
  '`data.object` is the sync job (with its `cancellations`) exactly as `GET /v1/sync_jobs/{id}` returned it at the moment of the change.',
);

const CancelledOrder = openApi(
  z.object({
    resellerStoreId: z.string(),
    externalOrderId: ExternalOrderId,
    scope: z.enum(['order', 'lines']).describe('`order`: the whole order; `lines`: some lines.'),
    lines: z.array(z.object({ sku: z.string(), quantity: z.number().int() })).describe('The reseller lines cancelled, by SKU; empty for the whole order.'),
    syncJobIds: z.array(z.string()).describe('The jobs given a cancellation by this signal; empty when the order was not routed or nothing was left open.'),
  }),
  { title: 'CancelledOrder' },
);

export const OrderCancelledEventSchema = storeEvent('OrderCancelledEvent', ['order.cancelled'], CancelledOrder, 'A storefront cancellation was received (once per signal).');

const UnmatchedOrder = openApi(
  z.object({
    resellerStoreId: z.string(),
    externalOrderId: ExternalOrderId,
    lines: z
      .array(z.object({ sku: z.string(), title: z.string(), vendor: z.string(), quantity: z.number().int() }))
      .describe(
        'The lines no active source store matched, or more than one did (two suppliers added before vendor tags were compared in their current folded form): those go to none, and the `order.lines_unmatched` audit entry names the suppliers under `ambiguous`.',
      ),
  }),
  { title: 'UnmatchedOrder' },
);

export const OrderUnmatchedEventSchema = storeEvent('OrderUnmatchedEvent', ['order.unmatched'], UnmatchedOrder, 'Sent once per order, however often its webhook is delivered.');

const ReconciledOrder = openApi(
  z.object({
    resellerStoreId: z.string(),
    externalOrderId: ExternalOrderId,
    syncJobIds: z.array(z.string()).describe('The jobs reconciliation created for the order.'),
  }),
  { title: 'ReconciledOrder' },
);

export const OrderReconciledEventSchema = storeEvent('OrderReconciledEvent', ['order.reconciled'], ReconciledOrder, 'An order routed by reconciliation because its webhook never came.');

export const PingEventSchema = openApi(
  z.object({
    ...eventFields,
    type: z.enum(['ping']),
    resellerStoreId: z.string().nullable().describe('Always null: a ping belongs to no store.'),
    data: z.object({ object: z.object({ webhookEndpointId: z.string() }) }),
  }),
  { title: 'PingEvent', description: 'A test delivery to one endpoint; it belongs to no store.' },
);

export const EventSchema = openApi(
  z.discriminatedUnion('type', [
    SyncJobEventSchema,
    FulfillmentEventSchema,
    OrderUnmatchedEventSchema,
    OrderReconciledEventSchema,
    OrderCancelledEventSchema,
    CancellationEventSchema,
    PingEventSchema,
  ]),
  {
    title: 'Event',
    description:
      'What deliveries carry as their JSON body, and what `GET /v1/events` lists. Delivery is at least once and unordered: de-duplicate on `id` (the `webhook-id` header) and order by `createdAt` and the object\'s `updatedAt`.',
  },
);

/** The event schema plus `request_id`, untitled so it stays inline (the event itself is the named component). */
function withRequestId<T extends z.AnyZodObject>(schema: T) {
  const extended = schema.extend({ request_id: RequestId });
  delete (extended as { metaOpenApi?: unknown }).metaOpenApi;
  return extended;
}

/**
 * `GET /v1/events/{id}`: one of the events with `request_id`. A plain union (no discriminator), so
 * its inline members are valid OpenAPI; `z.intersection` with the named union would be simpler but
 * makes the examples fail validation (unevaluated `request_id`).
 */
const EventResponse = openApi(
  z.union([
    withRequestId(SyncJobEventSchema),
    withRequestId(FulfillmentEventSchema),
    withRequestId(OrderUnmatchedEventSchema),
    withRequestId(OrderReconciledEventSchema),
    withRequestId(OrderCancelledEventSchema),
    withRequestId(CancellationEventSchema),
    withRequestId(PingEventSchema),
  ]),
  { title: 'EventResponse', description: 'An event (see `Event`) and the request id.' },
);

export const eventsContract = c.router(
  {
    list: {
      method: 'GET',
      path: '/v1/events',
      query: pageQuery('event').extend({
        type: EventTypeSchema.optional(),
        reseller_store_id: z.string().max(64).optional(),
        created_after: FilterTimestamp().optional().describe('Only events created after this time (ISO-8601 UTC).'),
        created_before: FilterTimestamp().optional().describe('Only events created before this time (ISO-8601 UTC).'),
      }),
      responses: { 200: listOf(EventSchema, 'EventList'), 400: errorResponse(400) },
      summary: 'List events',
      description:
        'Events of the current user\'s stores (and their endpoints\' pings), newest first. Kept at least 30 days. `createdAt` is set when the change is made, before it commits, so an event can be listed after a newer one: when polling with `created_after`, start the window a minute before the last `createdAt` seen and skip the ids already seen.',
    },
    get: {
      method: 'GET',
      path: '/v1/events/:id',
      pathParams: IdParam,
      responses: {
        200: EventResponse,
        400: errorResponse(400),
        404: errorResponse(404),
      },
      summary: 'Get an event',
      description: 'One event, exactly as its deliveries carry it.',
    },
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
