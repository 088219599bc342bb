/**
 * Issue 26: what an operator reads on a timeline beside each attempt. `nextRetryAt` on sync jobs,
 * fulfillments and cancellations says when a failed one's automatic retry is due, exactly as its
 * queue message is scheduled; each attempt keeps a redacted, bounded excerpt of its last platform
 * call (`request`, `response`) that never carries the store's token or the customer's personal
 * data. Real service, queue, database and sandbox; retries are a minute apart here, so a failed
 * unit of work stays failed while it is looked at.
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { bounded, exchangeOf } from '../src/platforms/exchange.ts';
import { buildFulfillmentPayload, sendWebhook, type OrderLineInput } from './sandbox/server.ts';
import { ISO_UTC } from './support/assertions.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { lineOf, waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '60000' });

const EXCERPT_MAX_BYTES = 2048;
const CUT = /… \[cut: \d+ more bytes\]$/;
const CUSTOMER_EMAIL = 'ada.lovelace@example.org';
let nextOrderId = 3_100_000 + Math.floor(Math.random() * 10_000) * 10;

interface Store {
  id: string;
  shopDomain: string;
  platform: Platform;
  secret: string;
  token: string;
}

interface Shop {
  user: { token: string };
  reseller: Store;
  supplier: Store;
}

const it = test
  .extend('shopWith', { scope: 'file' }, ({ api }) => async (supplierPlatform: Platform = 'custom'): Promise<Shop> => {
    const user = await registerUser(api);
    const store = async (create: (overrides: Record<string, unknown>) => Promise<any>, prefix: string) => {
      const secret = `whsec_${prefix}_${uniqueSuffix()}`;
      const token = `${prefix}_token_${uniqueSuffix()}${uniqueSuffix()}`;
      const created = await create({ webhookSecret: secret, accessToken: token });
      return { id: created.id, shopDomain: created.shopDomain, platform: created.platform, secret, token };
    };
    const reseller = await store((overrides) => createResellerStore(api, user.token, { platform: 'platform_a', ...overrides }), 'shop');
    const supplier = await store((overrides) => createSourceStore(api, user.token, reseller.id, { platform: supplierPlatform, vendorTag: 'Acme', ...overrides }), 'sup');
    return { user, reseller, supplier };
  })
  /** Sends the storefront's orders/create for a new order (with the customer's email and address) and returns its job's id. */
  .extend('route', { scope: 'file' }, ({ service, sandbox }) => async (shop: Shop, lines: OrderLineInput[] = [lineOf('Acme')]) => {
    const payload = sandbox.buildOrderPayload('platform_a', { id: nextOrderId++, lines, email: CUSTOMER_EMAIL });
    sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', payload);
    const response = await sendWebhook({
      targetUrl: `${service.url}${ORDERS_PATH}`,
      shopDomain: shop.reseller.shopDomain,
      secret: shop.reseller.secret,
      topic: 'orders/create',
      payload,
    });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return { order: payload as Record<string, any>, jobId: (response.body as { syncJobIds: string[] }).syncJobIds[0]! };
  });

/** The pg-boss message that will retry a row, as queued. */
async function queuedRetry(databaseUrl: string, table: string, id: string) {
  const [row] = await queryRows<{ start_after: Date; state: string }>(
    databaseUrl,
    `select m.start_after, m.state::text as state from ${table} t join pgboss.job m on m.id::text = t.queue_message_id where t.id = $1`,
    [id],
  );
  return row!;
}

/** An excerpt's body: at most EXCERPT_MAX_BYTES before the cut marker, and never the store's token. */
function expectSafe(body: string | null, ...secrets: string[]) {
  if (body === null) return;
  expect(Buffer.byteLength(body.replace(CUT, ''))).toBeLessThanOrEqual(EXCERPT_MAX_BYTES);
  for (const secret of [...secrets, CUSTOMER_EMAIL]) expect(body).not.toContain(secret);
}

describe('nextRetryAt', () => {
  it('is when a failed sync job’s queued retry starts, in its GET, its list, its sync_job.failed event, and null once it moves on', async ({ api, service, sandbox, shopWith, route }) => {
    const shop = await shopWith();
    sandbox.setFaults(shop.supplier.shopDomain, { alwaysFail: true, status: 503 });
    const before = Date.now();
    const { jobId } = await route(shop);
    const failed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'failed', 15_000, 'failed');

    expect(failed.nextRetryAt).toMatch(ISO_UTC);
    expect(Date.parse(failed.nextRetryAt)).toBeGreaterThan(Date.now() + 30_000);
    expect(Date.parse(failed.nextRetryAt)).toBeLessThanOrEqual(before + 60_000 + 15_000);
    const queued = await queuedRetry(service.databaseUrl, 'sync_jobs', jobId);
    expect(queued.state).toBe('created');
    expect(new Date(queued.start_after).toISOString()).toBe(failed.nextRetryAt);

    const listed = await api.get(`/v1/sync_jobs?reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(listed.body.data.find((job: any) => job.id === jobId).nextRetryAt).toBe(failed.nextRetryAt);
    const events = await waitFor(async () => {
      const response = await api.get(`/v1/events?type=sync_job.failed&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
      return response.body.data.length > 0 ? response.body.data : null;
    }, 10_000, 'the sync_job.failed event');
    expect(events[0].data.object).toMatchObject({ id: jobId, status: 'failed', nextRetryAt: failed.nextRetryAt });

    // A manual retry replaces the scheduled one: nothing waits any more, then the job completes.
    sandbox.clearFaults(shop.supplier.shopDomain);
    const retried = await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ status: 'pending', nextRetryAt: null });
    const completed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed');
    expect(completed.nextRetryAt).toBeNull();
  });

  it('is on a failed fulfillment and a failed cancellation too, as their retries are queued', async ({ api, service, sandbox, shopWith, route }) => {
    const shop = await shopWith();
    const { order, jobId } = await route(shop);
    const placed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed');
    expect(placed.nextRetryAt).toBeNull();

    // The storefront refuses the tracking: the fulfillment fails and waits for its retry.
    sandbox.setFaults(shop.reseller.shopDomain, { alwaysFail: true, status: 502 });
    const delivered = await sendWebhook({
      targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
      shopDomain: shop.supplier.shopDomain,
      secret: shop.supplier.secret,
      topic: 'fulfillments/create',
      payload: buildFulfillmentPayload('custom', { orderId: placed.sourceOrderId, trackingNumbers: ['TRK-26'] }),
    });
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
    const withFailedTracking = await waitForJob(api, shop.user.token, jobId, (job) => job.fulfillments[0]?.status === 'failed', 15_000, 'fulfillment failed');
    const fulfillment = withFailedTracking.fulfillments[0];
    expect(Date.parse(fulfillment.nextRetryAt)).toBeGreaterThan(Date.now() + 30_000);
    expect(new Date((await queuedRetry(service.databaseUrl, 'fulfillments', fulfillment.id)).start_after).toISOString()).toBe(fulfillment.nextRetryAt);
    expect(fulfillment.timeline[0]).toMatchObject({ outcome: 'failed', platformStatus: 502, request: { method: 'POST' }, response: { status: 502 } });
    expectSafe(fulfillment.timeline[0].request.body, shop.reseller.token);
    expectSafe(fulfillment.timeline[0].response.body, shop.reseller.token);

    // The customer cancels while the supplier's API is down: the cancellation fails and waits for its retry.
    sandbox.setFaults(shop.supplier.shopDomain, { alwaysFail: true, status: 503 });
    const cancelled = await sendWebhook({
      targetUrl: `${service.url}${ORDERS_PATH}`,
      shopDomain: shop.reseller.shopDomain,
      secret: shop.reseller.secret,
      topic: 'orders/cancelled',
      payload: { ...order, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' },
    });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    const withFailedCancellation = await waitForJob(api, shop.user.token, jobId, (job) => job.cancellations[0]?.status === 'failed', 15_000, 'cancellation failed');
    const cancellation = withFailedCancellation.cancellations[0];
    expect(Date.parse(cancellation.nextRetryAt)).toBeGreaterThan(Date.now() + 30_000);
    expect(new Date((await queuedRetry(service.databaseUrl, 'cancellations', cancellation.id)).start_after).toISOString()).toBe(cancellation.nextRetryAt);
    // The cancel call itself (custom's is sent first; the order is read only after a refusal).
    expect(cancellation.timeline[0]).toMatchObject({ outcome: 'failed', platformStatus: 503, request: { method: 'POST' }, response: { status: 503 } });
    expect(cancellation.timeline[0].request.path).toContain(`${placed.sourceOrderId}/cancel`);
    expectSafe(cancellation.timeline[0].request.body, shop.supplier.token);
    expectSafe(cancellation.timeline[0].response.body, shop.supplier.token);
  });
});

describe('request and response excerpts', () => {
  it('show what was sent and what came back, without the customer’s personal data or the token', async ({ api, shopWith, route }) => {
    for (const platform of ['platform_a', 'platform_b', 'custom'] as const) {
      const shop = await shopWith(platform);
      const { jobId } = await route(shop);
      const job = await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed');
      const [entry] = (await api.get(`/v1/sync_jobs/${jobId}/attempts`, { token: shop.user.token })).body.data;
      expect(entry, platform).toMatchObject({ outcome: 'succeeded', request: { method: 'POST' }, response: { status: 201 } });
      expect(entry.request.body, platform).toContain('SKU-Acme');
      expect(entry.request.body, platform).toContain('[redacted]');
      expect(entry.response.body, platform).toContain(String(job.sourceOrderId));
      // The sample address's street, city and the customer's name stay with the platform.
      for (const personal of ['Ada', 'Lovelace', '12 Analytical Row', 'London']) {
        expect(entry.request.body, `${platform}: ${personal}`).not.toContain(personal);
        expect(entry.response.body ?? '', `${platform}: ${personal}`).not.toContain(personal);
      }
      expectSafe(entry.request.body, shop.supplier.token);
      expectSafe(entry.response.body, shop.supplier.token);
    }
  });

  it('never carry the store’s token, even when the platform echoes it back', async ({ api, service, sandbox, shopWith, route }) => {
    for (const form of ['raw', 'url-encoded', 'base64', 'prefix'] as const) {
      const shop = await shopWith('custom');
      sandbox.setFaults(shop.supplier.shopDomain, { echoToken: form });
      const { jobId } = await route(shop);
      await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'failed', 15_000, 'failed');
      const [entry] = (await api.get(`/v1/sync_jobs/${jobId}/attempts`, { token: shop.user.token })).body.data;
      expect(entry.response, form).toMatchObject({ status: form === 'prefix' ? 422 : 401, body: expect.stringContaining('[redacted]') });
      const everything = JSON.stringify(entry);
      expect(everything, form).not.toContain(shop.supplier.token);
      expect(everything, form).not.toContain(shop.supplier.token.slice(0, 16));
      expect(everything, form).not.toContain(Buffer.from(shop.supplier.token).toString('base64').replace(/=+$/, ''));
      // Nor does what is stored.
      const [stored] = await queryRows<{ exchange: string }>(service.databaseUrl, 'select request::text || response::text as exchange from attempts where row_id = $1', [jobId]);
      expect(stored!.exchange, form).not.toContain(shop.supplier.token);
    }
  });

  it('are cut at 2 KiB with a marker, a large order and a large answer alike', async ({ api, sandbox, shopWith, route }) => {
    const shop = await shopWith('custom');
    const lines = Array.from({ length: 40 }, (_, i) => lineOf('Acme', { sku: `SKU-LONG-${String(i).padStart(3, '0')}`, title: `A rather long product title number ${i}` }));
    sandbox.setFaults(shop.supplier.shopDomain, { oversizedBodyNext: 1, oversizedBodyBytes: 50_000, oversizedBodyStatus: 500 });
    const { jobId } = await route(shop, lines);
    await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'failed', 15_000, 'failed');
    const [entry] = (await api.get(`/v1/sync_jobs/${jobId}/attempts`, { token: shop.user.token })).body.data;
    expect(entry.request.body).toMatch(CUT);
    expect(entry.request.body).toContain('SKU-LONG-000');
    expect(entry.request.body).not.toContain('SKU-LONG-039');
    expect(entry.response).toMatchObject({ status: 500, body: expect.stringMatching(CUT) });
    expectSafe(entry.request.body, shop.supplier.token);
    expectSafe(entry.response.body, shop.supplier.token);
  });
});

describe('an excerpt, built from one call', () => {
  const secret = 'tok_live_0123456789abcdefghijklmnopqrstuvwxyz';
  const call = (overrides: Record<string, unknown>) =>
    exchangeOf({ method: 'POST', path: '/orders', body: undefined, secret, status: 200, text: '', ...overrides });

  it('redacts secret fields, personal data and the token in a body that is not JSON, and any email in the path', () => {
    const text = `<html>"access_token": "${secret}", "email": "ada@example.org", "sku": "A-1" contact bob@example.com; echo ${secret.slice(4, 30)}</html>`;
    const { request, response } = call({ path: `/orders?email=ada%40example.org&customer=carol@example.net`, text });
    expect(response!.body).toBe('<html>"access_token": "[redacted]", "email": "[redacted]", "sku": "A-1" contact [redacted]; echo [redacted]</html>');
    expect(request.path).toBe('/orders?email=[redacted]&customer=[redacted]');
  });

  it('redacts nested JSON fields by name, keeps nulls and what the operator needs', () => {
    const { request } = call({
      body: { order: { id: 7, customer: { first_name: 'Ada' }, billing_address: null, lines: [{ sku: 'A-1', quantity: 2, note: 'call ada@example.org' }], api_key: 'k', Signature: 's' } },
    });
    expect(JSON.parse(request.body!)).toEqual({
      order: { id: 7, customer: '[redacted]', billing_address: null, lines: [{ sku: 'A-1', quantity: 2, note: 'call [redacted]' }], api_key: '[redacted]', Signature: '[redacted]' },
    });
  });

  it('cuts on a character boundary, never inside a multi-byte character, and says how much was left out', () => {
    const text = `${'é'.repeat(1500)}`; // 3,000 bytes
    const cut = bounded(text);
    expect(cut).toMatch(/^é+… \[cut: 952 more bytes\]$/);
    expect(Buffer.byteLength(cut.replace(/… \[cut: \d+ more bytes\]$/, ''))).toBe(2048);
    expect(bounded('short')).toBe('short');
    expect(call({ status: null }).response).toBeNull();
    expect(call({ text: 'x'.repeat(300 * 1024) }).response!.body).toBe('[a body of 307200 bytes, not kept]');
  });
});
