/** Example requests and responses for openapi.json, by operationId. Values are illustrative. */

const ids = {
  user: 'usr_01a201ac3e0e7107992e4fb8c2048f41',
  reseller: 'rst_01a201ac56e574db9907451828c1b813',
  source: 'sst_01a201ac5780728594e683911374dd9d',
  job: 'job_01a201b57da7700ca35bfe9e14e57a5a',
  key: 'key_01a201ac57987158b6cee14f086d16a9',
  audit: 'aud_01a201ac578273cfa84c103a66b63260',
  fulfillment: 'ful_01a201b47619708d95b4165a1a703a86',
  request: 'req_5d3cc519db9d49029ca12ef17bf12787',
  reconciliation: 'rec_01a201c0a3d27c41b7f0c6c2d2f5e0a1',
  event: 'evt_01a201b57f0a7c3e8d21e0b6f4c9a113',
  endpoint: 'we_01a201ac60d27a4c9f1e5b7d2c8a4f06',
  delivery: 'dlv_01a201b57f1b4e0d9a3c2f8e7b6d5c41',
  divergence: 'div_01a201c4b1e2730a9c5d6e7f8a9b0c1d',
  watchPass: 'wps_01a201c4b0d1720f8e3a4b5c6d7e8f90',
};
const at = '2026-11-22T05:13:21.382Z';

const session = { accessToken: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c3JfMDEifQ.c2lnbmF0dXJl', expiresAt: 1795325295, tokenType: 'Bearer', request_id: ids.request };
const credentials = { email: 'owner@reseller.example', password: 'correct horse battery' };
const resellerStore = { id: ids.reseller, ownerId: ids.user, name: 'Demo Boutique', platform: 'platform_a', shopDomain: 'demo-boutique.example', createdAt: at, deletedAt: null };
const sourceStore = {
  id: ids.source,
  resellerStoreId: ids.reseller,
  name: 'Acme Anvils',
  platform: 'platform_b',
  shopDomain: 'acme-anvils.example',
  vendorTag: 'Acme',
  pricingMode: 'percentage',
  pricingConfig: { type: 'percentage', value: 25 },
  createdAt: at,
  deletedAt: null,
};
const syncJob = {
  id: ids.job,
  resellerStoreId: ids.reseller,
  sourceStoreId: ids.source,
  status: 'completed',
  attempts: 1,
  externalOrderId: '450789469',
  sourceOrderId: '1002',
  errorMessage: null,
  completedAt: at,
  failedAt: null,
  deadAt: null,
  nextRetryAt: null,
  createdAt: at,
  updatedAt: at,
  supplierCancelledAt: null,
  supplierCancelReason: null,
};
const fulfillment = {
  id: ids.fulfillment,
  syncJobId: ids.job,
  status: 'completed',
  attempts: 1,
  trackingNumbers: ['1Z999AA10123456784'],
  trackingUrls: ['https://track.example/1Z999AA10123456784'],
  trackingCompany: 'UPS',
  resellerFulfillmentId: '255858046',
  errorMessage: null,
  completedAt: at,
  deadAt: null,
  nextRetryAt: null,
  createdAt: at,
  timeline: [
    {
      attempt: 1, trigger: 'initial', startedAt: at, finishedAt: '2026-11-22T05:13:21.594Z', durationMs: 212, outcome: 'succeeded', errorMessage: null, platformStatus: 201,
      request: { method: 'POST', path: '/admin/api/orders/450789469/fulfillments.json', body: '{"fulfillment":{"tracking_numbers":["1Z999AA10123456784"],"tracking_company":"UPS","notify_customer":true}}' },
      response: { status: 201, body: '{"fulfillment":{"id":255858046,"order_id":450789469,"status":"success"}}' },
      resellerFulfillmentId: '255858046',
    },
  ],
};
const attemptAt = (ms: number) => new Date(Date.parse(at) + ms).toISOString();
const jobTimeline = [
  {
    attempt: 1, trigger: 'initial', startedAt: at, finishedAt: attemptAt(180), durationMs: 180, outcome: 'failed',
    errorMessage: 'platform_b acme-anvils.example: POST /wp-json/wc/v3/orders answered 503: Service Unavailable', platformStatus: 503,
    request: { method: 'POST', path: '/wp-json/wc/v3/orders', body: '{"status":"processing","currency":"EUR","billing":"[redacted]","shipping":"[redacted]","line_items":[{"sku":"ANV-1","quantity":1,"total":"100.00"}],"meta_data":[{"key":"sync_reference","value":"job_01a201c9d1e07a3c8f21b0d4e6a9c512"}]}' },
    response: { status: 503, body: '{"code":"service_unavailable","message":"Service Unavailable"}' },
    sourceOrderId: null,
  },
  {
    attempt: 2, trigger: 'automatic_retry', startedAt: attemptAt(30_200), finishedAt: attemptAt(30_410), durationMs: 210, outcome: 'succeeded', errorMessage: null, platformStatus: 201,
    request: { method: 'POST', path: '/wp-json/wc/v3/orders', body: '{"status":"processing","currency":"EUR","billing":"[redacted]","shipping":"[redacted]","line_items":[{"sku":"ANV-1","quantity":1,"total":"100.00"}],"meta_data":[{"key":"sync_reference","value":"job_01a201c9d1e07a3c8f21b0d4e6a9c512"}]}' },
    response: { status: 201, body: '{"id":1002,"status":"processing","currency":"EUR","billing":"[redacted]","shipping":"[redacted]"}' },
    sourceOrderId: '1002',
  },
];
const apiKey = { id: ids.key, ownerId: ids.user, prefix: 'sk_live_', environment: 'live', name: 'Warehouse integration', lastUsedAt: null, createdAt: at, revokedAt: null };
const auditEntry = {
  id: ids.audit,
  resellerStoreId: ids.reseller,
  action: 'sync_job.created',
  resourceType: 'sync_job',
  resourceId: ids.job,
  metadata: { origin: 'webhook', externalOrderId: '450789469', sourceStoreId: ids.source },
  actorId: 'system',
  createdAt: at,
};
const reconciliation = {
  id: ids.reconciliation,
  resellerStoreId: ids.reseller,
  trigger: 'scheduled',
  status: 'succeeded',
  since: '2026-11-22T05:03:21.382Z',
  startedAt: at,
  finishedAt: '2026-11-22T05:13:22.104Z',
  ordersSeen: 12,
  ordersRouted: 1,
  error: null,
};
const divergence = {
  id: ids.divergence,
  object: 'divergence',
  type: 'supplier_cancelled',
  status: 'open',
  resellerStoreId: ids.reseller,
  syncJobId: ids.job,
  subjectId: ids.job,
  since: at,
  detail: 'Cancelled by the supplier (inventory).',
  resolvedAt: null,
  dismissedAt: null,
};
const list = (url: string, item: object) => ({ object: 'list', data: [item], has_more: false, url, request_id: ids.request });
const one = (item: object) => ({ ...item, request_id: ids.request });
const received = { received: true, syncJobIds: [ids.job], request_id: ids.request };

const syncJobEvent = {
  id: ids.event,
  object: 'event',
  type: 'sync_job.completed',
  createdAt: at,
  resellerStoreId: ids.reseller,
  data: { object: { ...syncJob, fulfillments: [], cancellations: [] } },
};
const webhookEndpoint = {
  id: ids.endpoint,
  object: 'webhook_endpoint',
  url: 'https://integrator.example/webhooks/orders',
  enabledEvents: ['sync_job.completed', 'sync_job.dead', 'fulfillment.completed'],
  description: 'ERP sync',
  status: 'enabled',
  disabledReason: null,
  createdAt: at,
  updatedAt: at,
};
const signingSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const delivery = {
  id: ids.delivery,
  eventId: ids.event,
  eventType: 'sync_job.completed',
  status: 'succeeded',
  attempts: 1,
  lastAttemptAt: at,
  nextAttemptAt: null,
  lastResponseStatus: 200,
  lastError: null,
  durationMs: 84,
};

export interface OperationExamples {
  /** The request body's one example (`example`)... */
  request?: unknown;
  /** ...or its named examples (`examples`), where one would mislead: bodies that differ by platform. */
  requests?: Record<string, { summary: string; value: unknown }>;
  responses: Record<string, unknown>;
}

export const EXAMPLES: Record<string, OperationExamples> = {
  authRegister: { request: credentials, responses: { 201: session } },
  authLogin: { request: credentials, responses: { 200: session } },
  authRefresh: { responses: { 200: session } },
  authMe: { responses: { 200: { id: ids.user, email: credentials.email, createdAt: at, request_id: ids.request } } },
  apiKeysCreate: {
    request: { name: 'Warehouse integration', environment: 'live' },
    responses: { 201: one({ ...apiKey, raw_key: 'sk_live_6qQxfNosRAgQLsNp61jbLFvyOl-B926hsajCkBHJGQk' }) },
  },
  apiKeysList: { responses: { 200: list('/v1/api_keys', apiKey) } },
  apiKeysGet: { responses: { 200: one(apiKey) } },
  resellerStoresCreate: {
    request: { name: 'Demo Boutique', platform: 'platform_a', shopDomain: 'demo-boutique.example', accessToken: 'shpat_0123456789abcdef', webhookSecret: 'whsec_0123456789abcdef' },
    responses: { 201: one(resellerStore) },
  },
  resellerStoresList: { responses: { 200: list('/v1/reseller_stores', resellerStore) } },
  resellerStoresGet: { responses: { 200: one(resellerStore) } },
  resellerStoresUpdate: { request: { name: 'Demo Boutique EU' }, responses: { 200: one({ ...resellerStore, name: 'Demo Boutique EU' }) } },
  sourceStoresCreate: {
    request: {
      name: 'Acme Anvils',
      platform: 'platform_b',
      shopDomain: 'acme-anvils.example',
      accessToken: 'ck_0123456789abcdef',
      webhookSecret: 'whsec_acme_0123456789',
      vendorTag: 'Acme',
      pricingMode: 'percentage',
      pricingConfig: { type: 'percentage', value: 25 },
    },
    responses: { 201: one(sourceStore) },
  },
  sourceStoresList: { responses: { 200: list(`/v1/reseller_stores/${ids.reseller}/source_stores`, sourceStore) } },
  sourceStoresGet: { responses: { 200: one(sourceStore) } },
  sourceStoresUpdate: {
    request: { pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules: [{ field: 'price', op: 'multiply', value: 0.7 }, { field: 'sku', op: 'prefix', value: 'AC-' }] } },
    responses: { 200: one({ ...sourceStore, pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules: [{ field: 'price', op: 'multiply', value: 0.7 }, { field: 'sku', op: 'prefix', value: 'AC-' }] } }) },
  },
  syncJobsCreate: {
    requests: {
      numbered: { summary: 'An order of a platform_a or platform_b storefront (its order ids are numbers)', value: { source_store_id: ids.source, external_order_id: '450789469' } },
      custom: { summary: 'An order of a custom storefront (its order ids are strings)', value: { source_store_id: ids.source, external_order_id: 'SO-1001' } },
    },
    responses: { 201: one({ ...syncJob, status: 'pending', attempts: 0, sourceOrderId: null, completedAt: null, fulfillments: [], cancellations: [] }), 200: one({ ...syncJob, fulfillments: [], cancellations: [] }) },
  },
  syncJobsList: { responses: { 200: list('/v1/sync_jobs', syncJob) } },
  syncJobsGet: { responses: { 200: one({ ...syncJob, fulfillments: [fulfillment], cancellations: [] }) } },
  syncJobsRetry: { responses: { 200: one({ ...syncJob, status: 'pending', attempts: 4, sourceOrderId: null, completedAt: null, fulfillments: [], cancellations: [] }) } },
  reconciliationsStart: {
    request: { since: '2026-11-21T00:00:00.000Z' },
    responses: { 202: { reconciliationId: ids.reconciliation, request_id: ids.request } },
  },
  divergencesList: { responses: { 200: list(`/v1/reseller_stores/${ids.reseller}/divergences`, divergence) } },
  divergencesDismiss: { responses: { 200: one({ ...divergence, status: 'dismissed', dismissedAt: '2026-11-22T06:02:10.114Z' }) } },
  divergencesCheck: { responses: { 202: { divergenceCheckId: ids.watchPass, request_id: ids.request } } },
  reconciliationsList: { responses: { 200: list(`/v1/reseller_stores/${ids.reseller}/reconciliations`, reconciliation) } },
  syncJobsAttempts: { responses: { 200: { object: 'list', data: jobTimeline, has_more: false, url: `/v1/sync_jobs/${ids.job}/attempts`, request_id: ids.request } } },
  syncJobsBulkRetry: {
    request: { status: 'dead', reseller_store_id: ids.reseller },
    responses: { 200: { object: 'bulk_retry', retried: 1, syncJobIds: [ids.job], has_more: false, request_id: ids.request } },
  },
  resellerStoresStats: {
    responses: {
      200: one({
        syncJobs: { pending: 3, processing: 1, completed: 1742, failed: 2, dead: 1 },
        fulfillments: { pending: 0, processing: 0, completed: 1311, failed: 0, dead: 0 },
        oldestPendingSeconds: 4,
        lastOrderAt: at,
        lastReconciledAt: null,
        attention: { too_late: 0, unsupported: 0, supplier_cancelled: 1, stale: 0, cancellation_dead: 0, job_dead: 1, fulfillment_dead: 0 },
        cancellations: {
          byStatus: { pending: 0, processing: 0, completed: 12, failed: 0, dead: 0 },
          byOutcome: { cancelled: 9, not_placed: 2, too_late: 1, unsupported: 0 },
        },
      }),
    },
  },
  cancellationsRetry: {
    responses: {
      200: one({
        ...syncJob,
        fulfillments: [],
        cancellations: [
          {
            id: 'can_01a201c9d1e07a3c8f21b0d4e6a9c512',
            status: 'pending',
            outcome: null,
            scope: 'order',
            lines: [{ sku: 'ANV-1', quantity: 2 }],
            reason: null,
            attempts: 4,
            errorMessage: null,
            requestedAt: at,
            completedAt: null,
            nextRetryAt: null,
            timeline: [
              {
                attempt: 4, trigger: 'automatic_retry', startedAt: at, finishedAt: at, durationMs: 180, outcome: 'failed',
                errorMessage: 'platform_b acme-anvils.example: PUT /wp-json/wc/v3/orders/1002 answered 503: Service Unavailable', platformStatus: 503,
                request: { method: 'PUT', path: '/wp-json/wc/v3/orders/1002', body: '{"status":"cancelled"}' },
                response: { status: 503, body: '{"code":"service_unavailable","message":"Service Unavailable"}' },
                cancellationOutcome: null,
              },
            ],
          },
        ],
      }),
    },
  },
  fulfillmentsRetry: {
    responses: {
      200: one({
        ...syncJob,
        fulfillments: [
          {
            ...fulfillment,
            status: 'pending',
            attempts: 4,
            resellerFulfillmentId: null,
            completedAt: null,
            timeline: [
              {
                attempt: 4, trigger: 'automatic_retry', startedAt: at, finishedAt: at, durationMs: 190, outcome: 'failed',
                errorMessage: 'platform_a reseller.example: POST /admin/api/orders/450789469/fulfillments.json answered 503: Service Unavailable', platformStatus: 503,
                request: { method: 'POST', path: '/admin/api/orders/450789469/fulfillments.json', body: '{"fulfillment":{"tracking_numbers":["1Z999AA10123456784"],"tracking_company":"UPS","notify_customer":true}}' },
                response: { status: 503, body: '{"errors":"Service Unavailable"}' },
                resellerFulfillmentId: null,
              },
            ],
          },
        ],
        cancellations: [],
      }),
    },
  },
  auditLogList: { responses: { 200: list('/v1/audit_log', auditEntry) } },
  webhooksOrders: {
    request: {
      id: 450789469,
      email: 'customer@example.com',
      currency: 'EUR',
      created_at: at,
      line_items: [{ id: 1, variant_id: 11, sku: 'ANV-1', title: 'Anvil, 20 kg', vendor: 'Acme', quantity: 1, price: '125.00' }],
      shipping_address: { name: 'Ada Lovelace', address1: '12 Analytical Row', address2: null, city: 'London', province: 'England', zip: 'EC1A 1BB', country_code: 'GB', phone: null },
    },
    responses: { 200: received },
  },
  webhooksFulfillments: {
    request: { order_id: 1002, tracking_provider: 'UPS', tracking_number: '1Z999AA10123456784', tracking_link: 'https://track.example/1Z999AA10123456784' },
    responses: { 200: received },
  },
  webhooksFulfillmentsForStore: {
    request: { order_id: 1002, tracking_provider: 'UPS', tracking_number: '1Z999AA10123456784', tracking_link: 'https://track.example/1Z999AA10123456784' },
    responses: { 200: received },
  },
  eventsList: { responses: { 200: list('/v1/events', syncJobEvent) } },
  eventsGet: { responses: { 200: one(syncJobEvent) } },
  webhookEndpointsCreate: {
    request: { url: webhookEndpoint.url, enabledEvents: webhookEndpoint.enabledEvents, description: webhookEndpoint.description },
    responses: { 201: one({ ...webhookEndpoint, secret: signingSecret }) },
  },
  webhookEndpointsList: { responses: { 200: list('/v1/webhook_endpoints', webhookEndpoint) } },
  webhookEndpointsGet: { responses: { 200: one(webhookEndpoint) } },
  webhookEndpointsUpdate: { request: { enabledEvents: ['*'] }, responses: { 200: one({ ...webhookEndpoint, enabledEvents: ['*'] }) } },
  webhookEndpointsRotateSecret: { responses: { 200: one({ ...webhookEndpoint, secret: 'whsec_3kU1Wq0iFv9bTn6yRZp2XcLmAe8GhJsD' }) } },
  webhookEndpointsTest: {
    responses: { 202: one({ ...delivery, eventType: 'ping', status: 'pending', attempts: 0, lastAttemptAt: null, nextAttemptAt: at, lastResponseStatus: null, durationMs: null }) },
  },
  webhookEndpointsListDeliveries: { responses: { 200: list(`/v1/webhook_endpoints/${ids.endpoint}/deliveries`, delivery) } },
  webhookEndpointsRetryDelivery: {
    responses: { 200: one({ ...delivery, status: 'pending', attempts: 8, nextAttemptAt: at, lastResponseStatus: 503, lastError: 'answered 503 Service Unavailable', durationMs: 212 }) },
  },
  healthLive: { responses: { 200: { status: 'ok', request_id: ids.request } } },
  healthReady: {
    responses: {
      200: { status: 'ok', checks: { database: 'ok', queue: 'ok' }, request_id: ids.request },
      503: { status: 'unavailable', checks: { database: 'failing', queue: 'failing' }, request_id: ids.request },
    },
  },
};
