/**
 * A retry long after the job was created (past the platforms' 24-hour Idempotency-Key) looks for the
 * order an earlier attempt may have created before creating one: a manual retry of a job that died
 * after a lost answer gets that order back, never a second, and the supplier's shipment of it reaches
 * the customer.
 */
import { describe, expect } from 'vitest';
import { buildFulfillmentPayload, sendWebhook } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { createShop, sendStorefrontWebhook } from './support/cancellations.ts';
import { test } from './support/fixtures.ts';
import { settled, waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '300', RECONCILE_INTERVAL_MS: '0' });
const it = test;

let nextOrderId = 7_730_000 + Math.floor(Math.random() * 10_000) * 10;

describe('a manual retry a day after a lost answer', () => {
  it('finds the order the lost answer created by its reference: one supplier order, its tracking pushed', async ({ api, sandbox, service }) => {
    const shop = await createShop(api, 'platform_a', 'custom');
    const { user, reseller, acme: supplier } = shop;
    // Every attempt's order is accepted (the first creates it, the Idempotency-Key replays it) and its answer lost.
    sandbox.setFaults(supplier.shopDomain, { acceptThenDropNext: 4 });
    const payload = sandbox.buildOrderPayload('platform_a', { id: nextOrderId++, lines: [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 1, price: '25.00' }] });
    sandbox.seedOrder(reseller.shopDomain, 'platform_a', payload);
    const routed = await sendStorefrontWebhook(service.url, shop, 'orders/create', payload);
    const jobId = (routed.body as { syncJobIds: string[] }).syncJobIds[0]!;
    expect(await settled(api, user.token, jobId)).toMatchObject({ status: 'dead', attempts: 4, sourceOrderId: null });
    const [placed] = sandbox.ordersFor(supplier.shopDomain);
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);

    // The supplier ships it: the job does not know that order yet, so the fulfillment is held.
    const shipped = await sendWebhook({
      targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
      shopDomain: supplier.shopDomain,
      secret: supplier.secret,
      topic: 'fulfillments/create',
      payload: buildFulfillmentPayload('custom', { orderId: placed!.id, trackingNumbers: ['LATE-1'] }),
    });
    expect(shipped.status).toBe(200);

    // A day later: the supplier no longer remembers the key, and the operator retries the job.
    await queryRows(service.databaseUrl, "update sync_jobs set created_at = created_at - interval '25 hours' where id = $1", [jobId]);
    sandbox.forgetIdempotencyKeys(supplier.shopDomain);
    expect((await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: user.token })).status).toBe(200);
    const done = await waitForJob(api, user.token, jobId, (job) => job.status === 'completed');
    expect(done.sourceOrderId).toBe(placed!.id);
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
    await waitFor(async () => sandbox.fulfillmentsFor(reseller.shopDomain).length === 1, 15_000, 'the tracking pushed to the storefront');
  });
});
