/**
 * Operations: GET /metrics after real traffic, the JSON logs (every line traceable to its request or
 * job), GET /readyz. The no-secret-in-logs check runs after every file (test/setup/); the database
 * outage side of /readyz is in the chaos suite (test/chaos/db-outage.test.ts).
 */
import { describe, expect } from 'vitest';
import { buildFulfillmentPayload, sendWebhook } from './sandbox/server.ts';
import { test as it } from './support/fixtures.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH } from './support/webhooks.ts';
import { addSupplier, lineOf, openShop, settled, waitForJob, type Shop, type Supplier } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text format, one sample per line (`name{label="value",...} number`). */
function parseMetrics(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return { samples, types };
}

/** Log lines that belong to no request and no job: the process starting and stopping. */
const PROCESS_LINES = new Set([
  'embedded PostgreSQL started',
  'HTTP API listening',
  'operations endpoints listening',
  'service started',
  'shutting down',
  'shutdown step failed',
]);

const resellerSecret = `whsec_ops_reseller_${Math.random().toString(36).slice(2)}`;
const acmeSecret = `whsec_ops_acme_${Math.random().toString(36).slice(2)}`;

let shop: Shop;
let acme: Supplier;
let bolt: Supplier;
let fulfilledJobId = '';

it.beforeAll(async ({ service, api, sandbox }) => {
  // Traffic: an order routed to two suppliers (one fails once, then succeeds), a forged delivery,
  // a supplier's fulfillment pushed back to the reseller store, a fulfillment for an unknown order.
  shop = await openShop(api, { webhookSecret: resellerSecret });
  acme = await addSupplier(api, shop, { platform: 'custom', vendorTag: 'Acme', webhookSecret: acmeSecret });
  bolt = await addSupplier(api, shop, { platform: 'platform_b', vendorTag: 'Bolt' });
  sandbox.setFaults(bolt.shopDomain, { failNext: 1, status: 503 });
  const order = sandbox.buildOrderPayload('platform_a', { id: 880_000_001, lines: [lineOf('Acme'), lineOf('Bolt')] });
  sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', order); // where the tracking goes back to
  const orders = `${service.url}${ORDERS_PATH}`;
  const delivered = await sendWebhook({ targetUrl: orders, shopDomain: shop.reseller.shopDomain, secret: resellerSecret, topic: 'orders/create', payload: order });
  expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
  const jobIds = (delivered.body as { syncJobIds: string[] }).syncJobIds;
  expect(jobIds).toHaveLength(2);
  const forged = await sendWebhook({ targetUrl: orders, shopDomain: shop.reseller.shopDomain, secret: 'not-the-secret', topic: 'orders/create', payload: order });
  expect(forged.status).toBe(401);
  for (const id of jobIds) expect((await settled(api, shop.user.token, id)).status).toBe('completed');

  const acmeJob = (await api.get(`/v1/sync_jobs?source_store_id=${acme.id}`, { token: shop.user.token })).body.data[0];
  fulfilledJobId = acmeJob.id;
  const fulfillments = `${service.url}${FULFILLMENTS_PATH}`;
  const shipment = buildFulfillmentPayload('custom', { orderId: acmeJob.sourceOrderId, trackingNumbers: ['TRK-OPS-1'], company: 'UPS' });
  const shipped = await sendWebhook({ targetUrl: fulfillments, shopDomain: acme.shopDomain, secret: acmeSecret, topic: 'fulfillments/create', payload: shipment });
  expect(shipped.status, JSON.stringify(shipped.body)).toBe(200);
  const stray = buildFulfillmentPayload('custom', { orderId: 'no-such-order', trackingNumbers: ['TRK-OPS-2'] });
  const strayAnswer = await sendWebhook({ targetUrl: fulfillments, shopDomain: acme.shopDomain, secret: acmeSecret, topic: 'fulfillments/create', payload: stray });
  expect(strayAnswer.status, JSON.stringify(strayAnswer.body)).toBeLessThan(500);
  await waitForJob(api, shop.user.token, fulfilledJobId, (job) => job.fulfillments[0]?.status === 'completed', 15_000, 'fulfilled job');
  expect((await api.get('/v1/sync_jobs/job_does_not_exist', { token: shop.user.token })).status).toBe(404);
});

describe('GET /metrics', () => {
  it('is Prometheus text with every family the runbook relies on, labelled as documented', async ({ service }) => {
    const response = await fetch(`${service.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const { samples, types } = parseMetrics(await response.text());
    const find = (name: string, labels: Record<string, string>) =>
      samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
    const value = (name: string, labels: Record<string, string>) => find(name, labels).reduce((sum, sample) => sum + sample.value, 0);

    // HTTP request duration by route pattern (never the raw path) and status.
    expect(types.get('http_request_duration_seconds')).toBe('histogram');
    expect(value('http_request_duration_seconds_count', { route: '/v1/orders/webhook', status: '200', method: 'POST' })).toBeGreaterThanOrEqual(1);
    // Refused by the webhook intake before the route ran: still labelled with its route.
    expect(value('http_request_duration_seconds_count', { route: '/v1/orders/webhook', status: '401' })).toBe(1);
    expect(value('http_request_duration_seconds_count', { route: '/v1/fulfillments/webhook', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(value('http_request_duration_seconds_count', { route: '/v1/sync_jobs/:id', status: '200', method: 'GET' })).toBeGreaterThanOrEqual(1);
    expect(value('http_request_duration_seconds_count', { route: '/v1/sync_jobs/:id', status: '404' })).toBe(1);
    expect(value('http_request_duration_seconds_count', { route: '/v1/reseller_stores/:rst_id/source_stores', status: '201' })).toBe(2);
    expect(find('http_request_duration_seconds_bucket', { route: '/v1/orders/webhook', status: '200', le: '+Inf' })).toHaveLength(1);
    const routes = new Set(find('http_request_duration_seconds_count', {}).map((sample) => sample.labels.route));
    for (const route of routes) expect(route, 'a raw path as route label').not.toMatch(/job_|rst_[a-z0-9]{6}|\d{6}/);

    // Lifecycle transitions by kind and status reached: both jobs completed, one after a failure.
    expect(types.get('attempt_transitions_total')).toBe('counter');
    expect(value('attempt_transitions_total', { kind: 'sync_job', status: 'processing' })).toBe(3);
    expect(value('attempt_transitions_total', { kind: 'sync_job', status: 'failed' })).toBe(1);
    expect(value('attempt_transitions_total', { kind: 'sync_job', status: 'completed' })).toBe(2);
    expect(value('attempt_transitions_total', { kind: 'fulfillment', status: 'completed' })).toBe(1);

    // Queue depth per queue, read from pg-boss when scraped.
    expect(types.get('queue_depth')).toBe('gauge');
    expect(find('queue_depth', { queue: 'sync-job.process' })).toHaveLength(1);
    expect(find('queue_depth', { queue: 'fulfillment.propagate' })).toHaveLength(1);
    expect(value('queue_depth', { queue: 'sync-job.process' })).toBe(0);

    // Webhook deliveries refused for their signature, by endpoint.
    expect(types.get('webhook_verification_failures_total')).toBe('counter');
    expect(value('webhook_verification_failures_total', { endpoint: 'orders' })).toBe(1);

    // Platform calls by platform and outcome: Bolt's 503 then success, Acme's order, the tracking on the storefront.
    expect(types.get('platform_call_duration_seconds')).toBe('histogram');
    expect(value('platform_call_duration_seconds_count', { platform: 'platform_b', method: 'POST', outcome: 'retryable_error' })).toBe(1);
    expect(value('platform_call_duration_seconds_count', { platform: 'platform_b', method: 'POST', outcome: 'success' })).toBe(1);
    expect(value('platform_call_duration_seconds_count', { platform: 'custom', method: 'POST', outcome: 'success' })).toBe(1);
    expect(value('platform_call_duration_seconds_count', { platform: 'platform_a', outcome: 'success' })).toBeGreaterThanOrEqual(1);

    // The process defaults come along (prom-client's collectDefaultMetrics).
    expect(types.has('process_cpu_user_seconds_total')).toBe(true);
  });
});

describe('logs', () => {
  it('are one JSON object a line, each traceable to its request or its job', async ({ service }) => {
    await waitFor(async () => service.logs.some((line) => line.includes('"fulfillment_id"') && line.includes('attempt completed')), 5_000, 'fulfillment log');
    expect(service.logs.length).toBeGreaterThan(20);
    const untraceable: string[] = [];
    const kinds = { request: 0, job: 0, fulfillment: 0 };
    for (const text of service.logs) {
      const line = JSON.parse(text) as Record<string, unknown>;
      expect(line).toMatchObject({ level: expect.any(Number), time: expect.any(Number), pid: process.pid, msg: expect.any(String) });
      if (typeof line.request_id === 'string') kinds.request++;
      else if (typeof line.job_id === 'string') kinds.job++;
      else if (typeof line.fulfillment_id === 'string') kinds.fulfillment++;
      else if (!PROCESS_LINES.has(line.msg as string)) untraceable.push(text);
    }
    expect(untraceable, 'lines with neither request_id nor job_id/fulfillment_id').toEqual([]);
    // Logged deep in the webhook service with the root logger: the request id comes from the log context.
    const strayLine = service.logs.map((text) => JSON.parse(text) as Record<string, unknown>).find((line) => line.msg === 'fulfillment of an order the service never placed');
    expect(strayLine?.request_id).toEqual(expect.stringMatching(/^req_/));
    expect(kinds.request).toBeGreaterThan(10);
    expect(kinds.job).toBeGreaterThanOrEqual(4);
    expect(kinds.fulfillment).toBeGreaterThanOrEqual(2);
  });

  it('carry the request id the caller sent, on the request line and on the lines the request caused', async ({ service }) => {
    const requestId = `ops-trace-${Date.now()}`;
    const stray = buildFulfillmentPayload('custom', { orderId: 'another-unknown-order', trackingNumbers: ['TRK-OPS-3'] });
    const body = JSON.stringify(stray);
    const { signPayload } = await import('../src/webhooks/signature.ts');
    const response = await fetch(`${service.url}${FULFILLMENTS_PATH}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-request-id': requestId,
        'x-platform-hmac-sha256': signPayload(Buffer.from(body), acmeSecret),
        'x-platform-shop-domain': acme.shopDomain,
        'x-platform-topic': 'fulfillments/create',
        'x-platform-webhook-id': `wh-${requestId}`,
      },
      body,
    });
    expect(response.headers.get('x-request-id')).toBe(requestId);
    const lines = await waitFor(async () => {
      const found = service.logs.filter((line) => line.includes(requestId)).map((line) => JSON.parse(line) as Record<string, unknown>);
      return found.some((line) => line.msg === 'request completed') ? found : null;
    }, 5_000, 'request log line');
    for (const line of lines) expect(line.request_id).toBe(requestId);
    // One key per field: a line bound to the request by pino-http does not get it twice.
    for (const text of service.logs.filter((line) => line.includes(requestId))) expect(text.match(/"request_id"/g)).toHaveLength(1);
  });
});

describe('GET /readyz', () => {
  it('is 200 with the state of each dependency while the database and the queue answer', async ({ api }) => {
    const response = await api.get('/readyz');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok', checks: { database: 'ok', queue: 'ok' }, request_id: expect.any(String) });
    const live = await api.get('/healthz');
    expect(live.status).toBe(200);
  });
});
