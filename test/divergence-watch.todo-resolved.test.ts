/**
 * Entries of the reseller's to-do list leave it when the problem is gone
 * (order-changes.md, "The divergence watch": an entry leaves the list when resolved). A cancellation
 * of some lines that died (the supplier down), or that the supplier's platform could not make
 * (`unsupported`), is moot once the storefront's cancellation of the whole order cancelled the
 * supplier order: nothing of it is left to cancel. Real service, queue, database and sandbox.
 */
import { describe, expect } from 'vitest';
import { test } from './support/fixtures.ts';
import { ANVIL, BELL, createAcmeShop, sendStorefrontWebhook } from './support/cancellations.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { sendWebhook } from './sandbox/server.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500', DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0' });
const it = test;

let nextOrderId = 2_396_000 + Math.floor(Math.random() * 10_000) * 10;

const todoOf = async (api: any, shop: { user: { token: string }; reseller: { id: string } }) =>
  ((await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data as any[]).map((entry) => ({ type: entry.type, syncJobId: entry.syncJobId, subjectId: entry.subjectId }));

describe('a whole-order cancellation that cancelled the supplier order', () => {
  it("resolves the job's cancellation_dead entry of a lines cancellation that died before it: nothing is left to cancel", async ({ api, sandbox, service }) => {
    const shop = await createAcmeShop(api, 'custom', 'custom');
    const order = sandbox.buildOrderPayload('custom', { id: `ord_${nextOrderId++}`, lines: [ANVIL, BELL] }) as Record<string, any>;
    const ids = ((await sendStorefrontWebhook(service.url, shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const placed = await waitForJob(api, shop.user.token, ids[0]!, (j) => j.status === 'completed');

    // The customer cancels the anvils while the supplier is down for cancellations: it dies, on the to-do list.
    sandbox.setFaults(shop.acme.shopDomain, { cancelFailNext: 4, cancelStatus: 503 });
    await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 2 }] });
    const dead = await waitForJob(api, shop.user.token, placed.id, (j) => j.cancellations[0]?.status === 'dead', 20_000);
    expect(await todoOf(api, shop)).toEqual([{ type: 'cancellation_dead', syncJobId: placed.id, subjectId: dead.cancellations[0].id }]);

    // Then the whole order: the supplier answers again, and cancels its order whole.
    sandbox.clearFaults(shop.acme.shopDomain);
    await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
    const done = await waitForJob(api, shop.user.token, placed.id, (j) => j.cancellations.length === 2 && j.cancellations[1].status === 'completed', 20_000);
    expect(done.cancellations[1]).toMatchObject({ scope: 'order', outcome: 'cancelled' });
    expect(sandbox.orderOf(shop.acme.shopDomain, 'custom', placed.sourceOrderId)?.status).toBe('cancelled');

    // Nothing of the supplier order is left open: the dead anvils cancellation needs nothing from the reseller.
    expect(await todoOf(api, shop)).toEqual([]);
  });

  it("resolves the job's unsupported entry (platform_b lines to cancel by hand): the whole order is cancelled", async ({ api, sandbox, service }) => {
    const shop = await createAcmeShop(api, 'custom', 'platform_b');
    const order = sandbox.buildOrderPayload('custom', { id: `ord_${nextOrderId++}`, lines: [ANVIL, BELL] }) as Record<string, any>;
    const ids = ((await sendStorefrontWebhook(service.url, shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const placed = await waitForJob(api, shop.user.token, ids[0]!, (j) => j.status === 'completed');

    await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 2 }] });
    const unsupported = await waitForJob(api, shop.user.token, placed.id, (j) => j.cancellations[0]?.status === 'completed', 20_000);
    expect(unsupported.cancellations[0]).toMatchObject({ outcome: 'unsupported' });
    expect(await todoOf(api, shop)).toEqual([{ type: 'unsupported', syncJobId: placed.id, subjectId: unsupported.cancellations[0].id }]);

    await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
    const done = await waitForJob(api, shop.user.token, placed.id, (j) => j.cancellations.length === 2 && j.cancellations[1].status === 'completed', 20_000);
    expect(done.cancellations[1]).toMatchObject({ scope: 'order', outcome: 'cancelled' });
    // The anvils the reseller was told to cancel by hand are cancelled with the rest of the order.
    expect(await todoOf(api, shop)).toEqual([]);
  });

  it("resolves the job's supplier_cancelled entry once the storefront order is cancelled too: the reseller has taken the decision the entry asked for", async ({ api, sandbox, service }) => {
    const shop = await createAcmeShop(api, 'custom', 'custom');
    const order = sandbox.buildOrderPayload('custom', { id: `ord_${nextOrderId++}`, lines: [ANVIL] }) as Record<string, any>;
    const ids = ((await sendStorefrontWebhook(service.url, shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const placed = await waitForJob(api, shop.user.token, ids[0]!, (j) => j.status === 'completed');
    // The supplier cancels its order (out of stock), and says so.
    sandbox.cancelOrder(shop.acme.shopDomain, 'custom', placed.sourceOrderId);
    const told = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'orders/cancelled',
      payload: { id: placed.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'out of stock' } });
    expect(told.body).toMatchObject({ syncJobIds: [placed.id] });
    expect((await todoOf(api, shop)).map((entry) => entry.type)).toEqual(['supplier_cancelled']);

    // The reseller refunds the customer: the storefront order is cancelled, and the service's cancellation finds the supplier order cancelled.
    await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
    const done = await waitForJob(api, shop.user.token, placed.id, (j) => j.cancellations[0]?.status === 'completed', 20_000);
    expect(done.cancellations[0]).toMatchObject({ scope: 'order', outcome: 'cancelled' });
    expect(await todoOf(api, shop)).toEqual([]);
  });
});
