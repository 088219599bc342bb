/**
 * A manual retry of a dead fulfillment long after an attempt whose answer was lost: platforms keep
 * an Idempotency-Key 24 hours (platforms.md), so once it is forgotten the retry cannot count on it.
 * The tracking the lost answer added is on the storefront order already; the retry reads the order's
 * fulfillments first and does not notify the customer a second time.
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { buildFulfillmentPayload, sendWebhook } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { createShop, sendStorefrontWebhook } from './support/cancellations.ts';
import { test } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '300', RECONCILE_INTERVAL_MS: '0', DIVERGENCE_INTERVAL_MS: '0' });
const it = test;

let nextOrderId = 7_810_000 + Math.floor(Math.random() * 10_000) * 10;

const RESELLER_PLATFORMS: Platform[] = ['platform_a', 'platform_b', 'custom'];

describe.each(RESELLER_PLATFORMS)('a %s storefront', (resellerPlatform) => {
  it('a manual retry a day after a fulfillment whose answers were all lost pushes nothing twice: the tracking already on the order is not added again', async ({ api, sandbox, service }) => {
    const shop = await createShop(api, resellerPlatform, 'custom');
    const { user, reseller, acme: supplier } = shop;
    const n = nextOrderId++;
    const payload = sandbox.buildOrderPayload(resellerPlatform, { id: resellerPlatform === 'custom' ? `lr-${n}` : n, lines: [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 1, price: '25.00' }] });
    sandbox.seedOrder(reseller.shopDomain, resellerPlatform, payload);
    const routed = await sendStorefrontWebhook(service.url, shop, 'orders/create', payload);
    const jobId = (routed.body as { syncJobIds: string[] }).syncJobIds[0]!;
    const placed = await waitForJob(api, user.token, jobId, (job) => job.status === 'completed');

    // Every push of the tracking is carried out by the storefront and its answer lost (the first adds it, the replays repeat it).
    sandbox.setFaults(reseller.shopDomain, { acceptThenDropNext: 4 });
    const shipped = await sendWebhook({
      targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
      shopDomain: supplier.shopDomain,
      secret: supplier.secret,
      topic: 'fulfillments/create',
      payload: buildFulfillmentPayload('custom', { orderId: placed.sourceOrderId, trackingNumbers: ['LOST-ANSWER-1'] }),
    });
    expect(shipped.status).toBe(200);
    const dead = await waitForJob(api, user.token, jobId, (job) => job.fulfillments?.[0]?.status === 'dead', 30_000, 'fulfillment dead of');
    const fulfillmentId = dead.fulfillments[0].id as string;
    expect(sandbox.fulfillmentsFor(reseller.shopDomain)).toHaveLength(1);
    sandbox.clearFaults(reseller.shopDomain);

    // A day later the storefront no longer remembers the key, and the operator retries the fulfillment.
    await queryRows(service.databaseUrl, "update fulfillments set created_at = created_at - interval '25 hours' where id = $1", [fulfillmentId]);
    sandbox.forgetIdempotencyKeys(reseller.shopDomain);
    const retried = await api.post(`/v1/sync_jobs/${jobId}/fulfillments/${fulfillmentId}/retry`, { token: user.token });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    const done = await waitForJob(api, user.token, jobId, (job) => job.fulfillments?.[0]?.status === 'completed', 15_000, 'fulfillment completed of');
    expect(done.fulfillments[0].resellerFulfillmentId).toBe(String(sandbox.fulfillmentsFor(reseller.shopDomain)[0]!.id));
    // Settled: nothing more reaches the storefront.
    await waitFor(async () => (await queryRows(service.databaseUrl, 'select 1 from fulfillments where id = $1 and status = $2', [fulfillmentId, 'completed'])).length === 1, 5_000, 'completed');
    expect(sandbox.fulfillmentsFor(reseller.shopDomain)).toHaveLength(1);
  });
});

describe('a platform_b storefront, one call per tracking number', () => {
  it('a late retry after a push that added one number of two adds only the other', async ({ api, sandbox, service }) => {
    const shop = await createShop(api, 'platform_b', 'custom');
    const { user, reseller, acme: supplier } = shop;
    const payload = sandbox.buildOrderPayload('platform_b', { id: nextOrderId++, lines: [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 2, price: '25.00' }] });
    sandbox.seedOrder(reseller.shopDomain, 'platform_b', payload);
    const routed = await sendStorefrontWebhook(service.url, shop, 'orders/create', payload);
    const jobId = (routed.body as { syncJobIds: string[] }).syncJobIds[0]!;
    const placed = await waitForJob(api, user.token, jobId, (job) => job.status === 'completed');

    // The first number's call goes through; every call after it fails, the first one's replays included.
    sandbox.setFaults(reseller.shopDomain, { faultsAfter: 1, failNext: 20 });
    const shipped = await sendWebhook({
      targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
      shopDomain: supplier.shopDomain,
      secret: supplier.secret,
      topic: 'fulfillments/create',
      payload: buildFulfillmentPayload('custom', { orderId: placed.sourceOrderId, trackingNumbers: ['TWO-1', 'TWO-2'], trackingUrls: ['https://track.example/1', 'https://track.example/2'] }),
    });
    expect(shipped.status).toBe(200);
    const dead = await waitForJob(api, user.token, jobId, (job) => job.fulfillments?.[0]?.status === 'dead', 30_000, 'fulfillment dead of');
    const fulfillmentId = dead.fulfillments[0].id as string;
    expect(sandbox.fulfillmentsFor(reseller.shopDomain).map((pushed) => (pushed.body as { tracking_number: string }).tracking_number)).toEqual(['TWO-1']);
    sandbox.clearFaults(reseller.shopDomain);

    await queryRows(service.databaseUrl, "update fulfillments set created_at = created_at - interval '25 hours' where id = $1", [fulfillmentId]);
    sandbox.forgetIdempotencyKeys(reseller.shopDomain);
    expect((await api.post(`/v1/sync_jobs/${jobId}/fulfillments/${fulfillmentId}/retry`, { token: user.token })).status).toBe(200);
    await waitForJob(api, user.token, jobId, (job) => job.fulfillments?.[0]?.status === 'completed', 15_000, 'fulfillment completed of');
    expect(sandbox.fulfillmentsFor(reseller.shopDomain).map((pushed) => pushed.body)).toEqual([
      expect.objectContaining({ tracking_number: 'TWO-1' }),
      expect.objectContaining({ tracking_number: 'TWO-2', tracking_link: 'https://track.example/2' }),
    ]);
  });
});
