/**
 * A custom cancellation names a SKU alone; a storefront cancelling by SKU takes its first line of it
 * still open. When two suppliers sell that SKU in one order and one of them has two lines of it, the
 * quantity goes to the supplier of the storefront's first OPEN line of the SKU, line by line: not to
 * the job whose first line comes first while it has anything open (its first line may be cancelled
 * already, the next open line being the other supplier's).
 */
import { describe, expect } from 'vitest';
import { test } from './support/fixtures.ts';
import { BELL, NUT, createShop, sendStorefrontWebhook, settled } from './support/cancellations.ts';
import { waitForJob } from './support/sync-jobs.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0' });
const it = test;

let nextOrderId = 5_720_000 + Math.floor(Math.random() * 10_000) * 10;

describe('a custom storefront, a SKU sold by Acme on its first and third lines and by Bolt on its second', () => {
  it("cancelled by SKU twice, one at a time: Acme's first line, then Bolt's (the storefront's first open line of it)", async ({ api, sandbox, service }) => {
    const shop = await createShop(api, 'custom', 'custom');
    const id = `ord_${nextOrderId++}`;
    const built = sandbox.buildOrderPayload('custom', {
      id,
      lines: [{ ...BELL, sku: 'SHARED', quantity: 1 }, { ...NUT, sku: 'SHARED', quantity: 1 }, { ...BELL, sku: 'SHARED', title: 'Bell (engraved)', quantity: 1 }],
    }) as Record<string, any>;
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', built);
    const routed = await sendStorefrontWebhook(service.url, shop, 'orders/create', built);
    const [first, second] = (routed.body as { syncJobIds: string[] }).syncJobIds;
    const jobs = await Promise.all([first!, second!].map((jobId) => waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed', 20_000)));
    const acme = jobs.find((job) => job.sourceStoreId === shop.acme.id)!;
    const bolt = jobs.find((job) => job.sourceStoreId === shop.bolt.id)!;
    const cancelled = (quantities: number[], at: Date) => ({ ...built, updatedAt: new Date(at.getTime() + 500).toISOString(), lines: built.lines.map((line: any, i: number) => ({ ...line, cancelledQuantity: quantities[i] })) });

    // One SHARED cancelled: the storefront takes its first line, Acme's.
    const at1 = new Date();
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', cancelled([1, 0, 0], at1));
    await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id, cancelledAt: at1.toISOString(), lines: [{ sku: 'SHARED', quantity: 1 }] });
    expect((await waitForJob(api, shop.user.token, acme.id, settled, 20_000)).cancellations).toMatchObject([{ outcome: 'cancelled', lines: [{ sku: 'SHARED', quantity: 1 }] }]);

    // Another: the storefront's first open line of it is now Bolt's.
    const at2 = new Date(at1.getTime() + 2_000);
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', cancelled([1, 1, 0], at2));
    await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id, cancelledAt: at2.toISOString(), lines: [{ sku: 'SHARED', quantity: 1 }] });
    expect((await waitForJob(api, shop.user.token, bolt.id, settled, 20_000)).cancellations).toMatchObject([{ outcome: 'cancelled', lines: [{ sku: 'SHARED', quantity: 1 }] }]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // Acme keeps the engraved bell the customer kept: asked to cancel once.
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toHaveLength(1);
    // Bolt's order has that one line: cancelled whole.
    expect(sandbox.cancellationsFor(shop.bolt.shopDomain)).toMatchObject([{ orderId: bolt.sourceOrderId }]);
  }, 60_000);
});
