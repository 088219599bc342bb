import { z } from 'zod';
import { auth, authErrors, bodyErrors, c, errorResponse, IdParam, listOf, NullableTimestamp, openApi, pageQuery, RequestId, Timestamp } from './common.ts';
import { EVENT_TYPES } from './events.ts';

/** At most this many endpoints per user (events.md). */
export const MAX_WEBHOOK_ENDPOINTS_PER_USER = 16;
/** Test events an endpoint may be sent per minute (POST …/test); more answer 429 `rate_limited`. */
export const MAX_TEST_PINGS_PER_MINUTE = 20;

const SUBSCRIBABLE_TYPES = EVENT_TYPES.filter((type) => type !== 'ping') as [string, ...string[]];

const UrlSchema = z
  .string()
  .trim()
  .url()
  .max(2048)
  .describe(
    'Where events are POSTed. `https://` only in production; a host that is or resolves to a loopback, private, link-local, unique-local or unspecified address is refused there (400).',
  );

const EnabledEventsSchema = z
  .union([z.array(z.literal('*')).length(1), z.array(z.enum(SUBSCRIBABLE_TYPES)).min(1).max(SUBSCRIBABLE_TYPES.length)])
  .describe('`["*"]` for every event type, or a list of types (see `Event`).');

const DescriptionSchema = z.string().trim().max(500);

const WebhookEndpointFields = openApi(
  z.object({
    id: z.string().describe('`we_…`'),
    object: z.literal('webhook_endpoint'),
    url: z.string(),
    enabledEvents: z.array(z.string()),
    description: z.string().nullable(),
    status: z.enum(['enabled', 'disabled']).describe('Disabled endpoints receive nothing: new events are not queued for them, and what was queued fails unsent.'),
    disabledReason: z.string().nullable().describe('Why the service disabled the endpoint (every delivery failed for 5 days); null otherwise.'),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  { title: 'WebhookEndpointSummary' },
);

const WebhookEndpoint = openApi(WebhookEndpointFields.extend({ request_id: RequestId }), { title: 'WebhookEndpoint' });

const WebhookEndpointWithSecret = openApi(
  WebhookEndpoint.extend({
    secret: z
      .string()
      .describe('`whsec_<base64>`: the signing secret (Standard Webhooks). Shown only in this response; store it now.'),
  }),
  { title: 'WebhookEndpointWithSecret' },
);

const DeliveryFields = openApi(
  z.object({
    id: z.string().describe('`dlv_…`'),
    eventId: z.string(),
    eventType: z.string(),
    status: z.enum(['pending', 'succeeded', 'failed']).describe('`failed` once every scheduled attempt failed; it can be retried by hand.'),
    attempts: z.number().int().describe('Attempts made so far, manual retries included.'),
    lastAttemptAt: NullableTimestamp,
    nextAttemptAt: NullableTimestamp.describe('When the next attempt is due, while `pending`.'),
    lastResponseStatus: z.number().int().nullable().describe('HTTP status of the last answer; null when there was none (timeout, connection error).'),
    lastError: z.string().nullable().describe('Why the last attempt failed; null after a success.'),
    durationMs: z.number().int().nullable().describe('How long the last attempt took.'),
  }),
  { title: 'WebhookDeliverySummary' },
);

const Delivery = openApi(DeliveryFields.extend({ request_id: RequestId }), { title: 'WebhookDelivery' });

const DeliveryParams = IdParam.extend({ delivery_id: z.string().min(1).max(64) });

export const webhookEndpointsContract = c.router(
  {
    create: {
      method: 'POST',
      path: '/v1/webhook_endpoints',
      body: z.object({ url: UrlSchema, enabledEvents: EnabledEventsSchema, description: DescriptionSchema.optional() }).strict(),
      responses: { 201: WebhookEndpointWithSecret, 400: errorResponse(400), 409: errorResponse(409), ...bodyErrors },
      summary: 'Create a webhook endpoint',
      description: `Events of the chosen types are POSTed to \`url\`, signed as Standard Webhooks 1.0 says. The \`secret\` is returned only here (and by rotate_secret). At most ${MAX_WEBHOOK_ENDPOINTS_PER_USER} endpoints per user (409 \`too_many_webhook_endpoints\`).`,
    },
    list: {
      method: 'GET',
      path: '/v1/webhook_endpoints',
      query: pageQuery('webhookEndpoint'),
      responses: { 200: listOf(WebhookEndpointFields, 'WebhookEndpointList'), 400: errorResponse(400) },
      summary: 'List webhook endpoints',
      description: 'Endpoints of the current user, newest first. Never the secret.',
    },
    get: {
      method: 'GET',
      path: '/v1/webhook_endpoints/:id',
      pathParams: IdParam,
      responses: { 200: WebhookEndpoint, 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Get a webhook endpoint',
      description: 'One endpoint of the current user (never the secret).',
    },
    update: {
      method: 'PATCH',
      path: '/v1/webhook_endpoints/:id',
      pathParams: IdParam,
      body: z
        .object({
          url: UrlSchema.optional(),
          enabledEvents: EnabledEventsSchema.optional(),
          description: DescriptionSchema.nullable().optional(),
          status: z.enum(['enabled', 'disabled']).optional().describe('`enabled` turns a disabled endpoint back on and clears `disabledReason`.'),
        })
        .strict(),
      responses: { 200: WebhookEndpoint, 400: errorResponse(400), 404: errorResponse(404), ...bodyErrors },
      summary: 'Update a webhook endpoint',
      description: 'Changes the URL, the event types, the description or the status. Events already queued keep going to the endpoint.',
    },
    remove: {
      method: 'DELETE',
      path: '/v1/webhook_endpoints/:id',
      pathParams: IdParam,
      body: c.noBody(),
      responses: { 204: c.noBody(), 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Delete a webhook endpoint',
      description: 'Deletes the endpoint and its deliveries; pending deliveries to it stop.',
    },
    rotateSecret: {
      method: 'POST',
      path: '/v1/webhook_endpoints/:id/rotate_secret',
      pathParams: IdParam,
      body: c.noBody(),
      responses: { 200: WebhookEndpointWithSecret, 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Rotate the signing secret',
      description:
        'Returns a new `secret`. For 24 hours every delivery is signed with both the new and the old secret (two space-separated `v1,` signatures in `webhook-signature`), so receivers can switch without losing events.',
    },
    test: {
      method: 'POST',
      path: '/v1/webhook_endpoints/:id/test',
      pathParams: IdParam,
      body: c.noBody(),
      responses: { 202: Delivery, 400: errorResponse(400), 404: errorResponse(404), 409: errorResponse(409), 429: errorResponse(429) },
      summary: 'Send a test event',
      description: `Queues a \`ping\` event for this endpoint only, whatever its \`enabledEvents\`, and returns its delivery. A disabled endpoint answers 409 \`endpoint_disabled\`. At most ${MAX_TEST_PINGS_PER_MINUTE} per endpoint per minute; more answer 429 \`rate_limited\` with \`Retry-After\`.`,
    },
    listDeliveries: {
      method: 'GET',
      path: '/v1/webhook_endpoints/:id/deliveries',
      pathParams: IdParam,
      query: pageQuery('webhookDelivery').extend({
        status: z.enum(['pending', 'succeeded', 'failed']).optional(),
        event_id: z.string().max(64).optional(),
      }),
      responses: { 200: listOf(DeliveryFields, 'WebhookDeliveryList'), 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'List deliveries',
      description: 'One row per event sent to the endpoint, newest first.',
    },
    retryDelivery: {
      method: 'POST',
      path: '/v1/webhook_endpoints/:id/deliveries/:delivery_id/retry',
      pathParams: DeliveryParams,
      body: c.noBody(),
      responses: { 200: Delivery, 400: errorResponse(400), 404: errorResponse(404), 409: errorResponse(409) },
      summary: 'Retry a failed delivery',
      description:
        'Sends a `failed` delivery again with a fresh set of attempts (same `webhook-id`). A delivery that is not `failed` answers 409 `delivery_not_failed`; one to a disabled endpoint, 409 `endpoint_disabled`.',
    },
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
