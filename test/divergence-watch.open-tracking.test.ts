/**
 * A platform_b supplier can add shipment tracking to an order it leaves `processing` (platforms.md:
 * tracking lives in the order's shipment trackings, read apart; its fulfillments/create webhook
 * fires for it all the same). When that webhook is lost, the divergence watch must find the tracking
 * (order-changes.md, "Supplier shipped, tracking missing": fulfillments *or tracking numbers* no
 * webhook brought), not only on `completed` orders.
 */
import { expect } from 'vitest';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { check, deliverFulfillment, fulfillmentsOf, openTenant, placeOrder, pushedTracking, type Target } from './support/watch.ts';

// Passes run only when asked.
test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

it.for(['processing', 'on-hold'])(
  'platform_b: tracking added to a %s order with no webhook is pushed once by a pass; completing the order later and a late webhook push nothing more',
  async (status, { sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['platform_b']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    const untouched = await placeOrder(sandbox, tenant, supplier);
    const order = sandbox.orderOf(supplier.shopDomain, 'platform_b', placed.sourceOrderId)!;
    if (order.status !== status) sandbox.seedOrder(supplier.shopDomain, 'platform_b', { ...order, status });
    const [webhookBody] = sandbox.shipOrder(supplier.shopDomain, 'platform_b', placed.sourceOrderId, {
      trackingNumbers: ['1Z-OPEN-1'],
      trackingUrls: ['https://track.example/1Z-OPEN-1'],
      company: 'UPS',
      keepOpen: true,
    });
    expect(sandbox.orderOf(supplier.shopDomain, 'platform_b', placed.sourceOrderId)!.status).toBe(status);

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1, error: null });
    expect(await fulfillmentsOf(tenant, placed.jobId)).toHaveLength(1);
    expect(await fulfillmentsOf(tenant, untouched.jobId)).toEqual([]);
    const [pushed] = await pushedTracking(sandbox, tenant, 1);
    expect(JSON.stringify(pushed!.body)).toContain('1Z-OPEN-1');
    await waitFor(async () => (await fulfillmentsOf(tenant, placed.jobId))[0]?.status === 'completed', 20_000, 'tracking pushed');

    // The supplier completes the order later (the same tracking), and the lost webhook arrives after all.
    const shown = sandbox.orderOf(supplier.shopDomain, 'platform_b', placed.sourceOrderId)!;
    sandbox.seedOrder(supplier.shopDomain, 'platform_b', { ...shown, status: 'completed' });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    const late = await deliverFulfillment(tenant, supplier, webhookBody!);
    expect(late.status, JSON.stringify(late.body)).toBe(200);
    expect(await fulfillmentsOf(tenant, placed.jobId)).toHaveLength(1);
    expect(sandbox.fulfillmentsFor(tenant.reseller.shopDomain)).toHaveLength(1);
  },
);
