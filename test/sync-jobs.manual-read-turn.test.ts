/**
 * Review 16: a manual job's read of its supplier order after the create (`heldOrder`,
 * src/sync-jobs/attempt.ts) spends a turn of the store's rate like any call. It used to take a
 * connection of its own claiming one turn held, whatever the attempt's earlier calls had spent: a
 * retry that looked the order up first (the job over 12 hours old), found nothing and created it made
 * three calls on the two turns it reserved, the third with no turn at all, closer to the others than
 * the store's rate allows.
 */
import { describe, expect } from 'vitest';
import { test } from './support/fixtures.ts';
import { ANVIL, BELL, NUT, createShop, sendStorefrontWebhook, type Shop } from './support/cancellations.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { queryRows } from './support/database.ts';

/** The supplier's rate as the service paces it: 1 call a second, 2 at once. */
const LIMIT = { perSecond: 1, burst: 2 };
/**
 * As the sandbox enforces it: looser, for the time between a turn and its call's arrival (a call a
 * quarter of a second late on a loaded machine shifts the supplier's refill; at 1.2 a second that once
 * refused a third call that kept its turn). A call with no turn of its own, right after the create,
 * still finds the bucket empty.
 */
const ENFORCED = { perSecond: 1.5, burst: 2 };
test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', PLATFORM_PACING: `custom=${LIMIT.perSecond}:${LIMIT.burst}` });

let nextOrderId = 5_810_000 + Math.floor(Math.random() * 10_000) * 10;

const it = test.extend('shopWith', { scope: 'file' }, ({ api }) => () => createShop(api, 'custom', 'custom'));

describe('a custom storefront, a custom supplier that refused a manual job\'s first attempts, retried by hand a day later', () => {
  it("a bell cancelled before the retry: the retry's lookup, create and read of the supplier order each have a turn of the store's rate", async ({ api, sandbox, service, shopWith }) => {
    const shop: Shop = await shopWith();
    const id = `ord_${nextOrderId++}`;
    const order = sandbox.buildOrderPayload('custom', { id, lines: [ANVIL, BELL, NUT] }) as Record<string, any>;
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', order);
    // Acme refuses every attempt (a 500: nothing created): the job dies, having sent three bells.
    sandbox.setFaults(shop.acme.shopDomain, { alwaysFail: true, status: 500 });
    const created = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: shop.acme.id, external_order_id: id } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const jobId = created.body.id as string;
    await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'dead', 30_000);
    expect(sandbox.ordersFor(shop.acme.shopDomain)).toEqual([]);
    // The customer cancels a bell; the storefront shows it (the next read sends two bells: the orders sent differ).
    const at = new Date();
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', {
      ...order,
      updatedAt: new Date(at.getTime() + 1_000).toISOString(),
      lines: order.lines.map((line: any) => (line.sku === 'B-1' ? { ...line, cancelledQuantity: 1 } : line)),
    });
    await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id, cancelledAt: at.toISOString(), lines: [{ sku: 'B-1', quantity: 1 }] });
    // A day later (the retry looks the order up first), Acme answers, at its rate; its bucket full again.
    await queryRows(service.databaseUrl, "update sync_jobs set created_at = created_at - interval '25 hours' where id = $1", [jobId]);
    sandbox.setFaults(shop.acme.shopDomain, { rateLimit: ENFORCED });
    await new Promise((resolve) => setTimeout(resolve, (LIMIT.burst / LIMIT.perSecond) * 1_000 + 500));
    const before = sandbox.requestsFor(shop.acme.shopDomain).length;
    expect((await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token })).status).toBe(200);
    const placed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed', 30_000);
    const held = sandbox.ordersFor(shop.acme.shopDomain) as any[];
    expect(held).toHaveLength(1);
    expect(String(held[0].id)).toBe(placed.sourceOrderId);
    // The lookup (nothing found), the create and the read of the order: three calls, none refused for the rate.
    const calls = sandbox.requestsFor(shop.acme.shopDomain).slice(before);
    expect(calls.length, JSON.stringify(calls)).toBeGreaterThanOrEqual(3);
    expect(calls.filter((call) => call.status === 429), JSON.stringify(calls)).toEqual([]);
  }, 90_000);
});
