/**
 * Concurrent signals (issue 23, item 8): a create and a cancel at once, two cancels at once, and a
 * cancel while the placement attempt is in flight. Whatever the interleaving, every supplier order
 * that exists ends cancelled exactly once, and no job is left to be placed.
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { sendWebhook } from './sandbox/server.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { auditOf, getJob, waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50' });

let nextOrderId = 2_320_000 + Math.floor(Math.random() * 10_000) * 10;

interface Shop {
  user: TestUser;
  reseller: { id: string; shopDomain: string; platform: Platform; secret: string };
  supplier: { id: string; shopDomain: string; platform: Platform };
}

const settled = (job: any) => job.cancellations.length > 0 && job.cancellations.every((c: any) => c.status === 'completed');

const it = test
  .extend('shopWith', { scope: 'file' }, ({ api }) => async (supplierPlatform: Platform): Promise<Shop> => {
    const user = await registerUser(api);
    const secret = `whsec_reseller_${uniqueSuffix()}`;
    const reseller = await createResellerStore(api, user.token, { platform: 'platform_a', webhookSecret: secret });
    const supplier = await createSourceStore(api, user.token, reseller.id, { platform: supplierPlatform, vendorTag: 'Acme' });
    return { user, reseller: { ...reseller, secret }, supplier };
  })
  .extend('storefront', { scope: 'file' }, ({ service }) => (shop: Shop, topic: string, payload: unknown, webhookId?: string) =>
    sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: shop.reseller.shopDomain, secret: shop.reseller.secret, topic, payload, ...(webhookId && { webhookId }) }))
  .extend('jobsOf', { scope: 'file' }, ({ api }) => async (shop: Shop, orderId: string) => {
    const listed = await api.get(`/v1/sync_jobs?reseller_store_id=${shop.reseller.id}&external_order_id=${orderId}`, { token: shop.user.token });
    return listed.body.data as { id: string }[];
  });

const orderOf = (sandbox: { buildOrderPayload: (...args: any[]) => any }) =>
  sandbox.buildOrderPayload('platform_a', { id: nextOrderId++, lines: [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 1, price: '9.00' }] }) as Record<string, any>;

describe('concurrent signals', () => {
  for (const platform of ['platform_a', 'platform_b', 'custom'] as const) {
    it(`a create and a cancel at once (${platform} supplier): each order ends cancelled or never placed, each supplier order cancelled once`, async ({ api, sandbox, shopWith, storefront, jobsOf }) => {
      const shop = await shopWith(platform);
      const orders = Array.from({ length: 6 }, () => orderOf(sandbox));
      await Promise.all(
        orders.flatMap((order) => [
          storefront(shop, 'orders/create', order),
          storefront(shop, 'orders/cancelled', { ...order, cancelled_at: new Date().toISOString() }),
        ]),
      );
      for (const order of orders) {
        const [listed] = await waitFor(async () => {
          const jobs = await jobsOf(shop, String(order.id));
          return jobs.length === 1 && jobs;
        }, 15_000, 'the order\'s job');
        const job = await waitForJob(api, shop.user.token, listed!.id, settled, 20_000);
        expect(job.status).toBe('completed');
        expect(job.cancellations).toHaveLength(1);
        expect(['cancelled', 'not_placed']).toContain(job.cancellations[0].outcome);
        if (job.cancellations[0].outcome === 'not_placed') expect(job.sourceOrderId).toBeNull();
      }
      // Every supplier order placed was cancelled, exactly once.
      const placed = sandbox.ordersFor(shop.supplier.shopDomain).map((order) => String(order.id)).sort();
      const cancelled = sandbox.cancellationsFor(shop.supplier.shopDomain).map((c) => c.orderId).sort();
      expect(cancelled).toEqual(placed);
    });
  }

  it('two cancels at once: one cancellation, the supplier called once', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom');
    const order = orderOf(sandbox);
    const created = await storefront(shop, 'orders/create', order);
    const jobId = (created.body as { syncJobIds: string[] }).syncJobIds[0]!;
    await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed');
    const cancel = { ...order, cancelled_at: new Date().toISOString() };
    const answers = await Promise.all([storefront(shop, 'orders/cancelled', cancel, `c1-${order.id}`), storefront(shop, 'orders/cancelled', cancel, `c2-${order.id}`)]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    const job = await waitForJob(api, shop.user.token, jobId, settled);
    expect(job.cancellations).toHaveLength(1);
    expect(job.cancellations[0].outcome).toBe('cancelled');
    expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toHaveLength(1);
  });

  it('many orders cancelled at once, one of them delivered twelve times: each applied once, every delivery answered with its jobs', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom');
    const orders = Array.from({ length: 8 }, () => orderOf(sandbox));
    const jobIds = await Promise.all(
      orders.map(async (order) => {
        const created = await storefront(shop, 'orders/create', order);
        return (created.body as { syncJobIds: string[] }).syncJobIds[0]!;
      }),
    );
    await Promise.all(jobIds.map((jobId) => waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed')));
    // Arriving together, they are applied in shared transactions (group commit); the repeated
    // delivery of the first order may share one with its original.
    const deliveries = [...orders.keys(), ...Array.from({ length: 11 }, () => 0)].map((i) => ({ i, cancel: { ...orders[i]!, cancelled_at: new Date().toISOString() } }));
    const answers = await Promise.all(deliveries.map(({ i, cancel }) => storefront(shop, 'orders/cancelled', cancel, `many-${orders[i]!.id}`)));
    deliveries.forEach(({ i }, k) => expect(answers[k]!.body, `delivery ${k}`).toMatchObject({ received: true, syncJobIds: [jobIds[i]] }));
    for (const [i, jobId] of jobIds.entries()) {
      const job = await waitForJob(api, shop.user.token, jobId, settled);
      expect(job.cancellations, `order ${i}`).toMatchObject([{ status: 'completed', outcome: 'cancelled' }]);
    }
    expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toHaveLength(orders.length);
    const audit = await auditOf(api, shop.user.token, String(orders[0]!.id));
    expect(audit.filter((entry) => entry.action === 'order.cancelled')).toHaveLength(1);
  });

  it('a cancel during a placement attempt: the attempt finishes first, then what it created is cancelled', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('platform_b');
    // The supplier answers slowly: the attempt is in flight when the cancellation arrives.
    sandbox.setFaults(shop.supplier.shopDomain, { latencyMs: 1_500 });
    const order = orderOf(sandbox);
    const created = await storefront(shop, 'orders/create', order);
    const jobId = (created.body as { syncJobIds: string[] }).syncJobIds[0]!;
    await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'processing');
    await storefront(shop, 'orders/cancelled', { ...order, cancelled_at: new Date().toISOString() });
    expect((await getJob(api, shop.user.token, jobId)).status).toBe('processing');
    sandbox.clearFaults(shop.supplier.shopDomain);
    const job = await waitForJob(api, shop.user.token, jobId, settled, 20_000);
    expect(job).toMatchObject({ status: 'completed', sourceOrderId: expect.any(String) });
    expect(job.cancellations[0]).toMatchObject({ outcome: 'cancelled' });
    expect(sandbox.ordersFor(shop.supplier.shopDomain)).toHaveLength(1);
    expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toMatchObject([{ orderId: job.sourceOrderId }]);
  });
});
