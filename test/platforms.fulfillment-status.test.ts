/**
 * platform_a fulfillments are read with their `status` (platforms.md, the Fulfillment's fields): one
 * `cancelled`, or ended in `error` or `failure`, shipped nothing. Its tracking is not pushed to the
 * storefront order, whether its fulfillments/create webhook brings it or the divergence watch lists
 * it, and the watch does not take the order for shipped. (A cancellation reading such an order:
 * test/cancellations.lines.test.ts.)
 */
import { describe, expect } from 'vitest';
import { buildFulfillmentPayload } from './sandbox/server.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { check, deliverFulfillment, fulfillmentsOf, openTenant, placeOrder, pushedTracking, type Target } from './support/watch.ts';

// Passes run only when asked.
test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

const VOID_STATUSES = ['cancelled', 'error', 'failure'] as const;

describe('a platform_a supplier fulfillment that shipped nothing', () => {
  it.for(VOID_STATUSES)('status %s: its fulfillments/create webhook is acknowledged as ignored and pushes nothing; a shipped one still does', async (status, { sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['platform_a']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);

    const voided = { ...buildFulfillmentPayload('platform_a', { orderId: placed.sourceOrderId, trackingNumbers: ['VOID-1'], company: 'UPS' }), status };
    const answer = await deliverFulfillment(tenant, supplier, voided);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({ received: true, ignored: true });
    expect(await fulfillmentsOf(tenant, placed.jobId)).toEqual([]);

    const shipped = buildFulfillmentPayload('platform_a', { orderId: placed.sourceOrderId, trackingNumbers: ['REAL-1'], company: 'UPS' });
    expect(shipped.status).toBe('success');
    const real = await deliverFulfillment(tenant, supplier, shipped);
    expect(real.body).toMatchObject({ received: true, syncJobIds: [placed.jobId] });
    const pushed = await pushedTracking(sandbox, tenant, 1);
    await waitFor(async () => (await fulfillmentsOf(tenant, placed.jobId))[0]?.status === 'completed', 20_000, 'tracking pushed');
    expect(pushed).toHaveLength(1);
    expect(JSON.stringify(pushed[0]!.body)).toContain('REAL-1');
    expect(JSON.stringify(sandbox.fulfillmentsFor(tenant.reseller.shopDomain))).not.toContain('VOID-1');
  });

  it('listed by the divergence watch, a cancelled fulfillment is neither recorded nor pushed; the order is not taken for shipped', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['platform_a']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    // The supplier made a fulfillment, then cancelled it: the order shows it, `cancelled`, and is unfulfilled again.
    const order = sandbox.orderOf(supplier.shopDomain, 'platform_a', placed.sourceOrderId)!;
    const cancelled = { ...buildFulfillmentPayload('platform_a', { orderId: placed.sourceOrderId, trackingNumbers: ['VOID-W-1'], company: 'UPS' }), status: 'cancelled' };
    sandbox.seedOrder(supplier.shopDomain, 'platform_a', { ...order, fulfillments: [cancelled], fulfillment_status: null });

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0, error: null });
    expect(await fulfillmentsOf(tenant, placed.jobId)).toEqual([]);
    expect(sandbox.fulfillmentsFor(tenant.reseller.shopDomain)).toEqual([]);

    // Then it really ships: that shipment alone is pushed.
    sandbox.shipOrder(supplier.shopDomain, 'platform_a', placed.sourceOrderId, { trackingNumbers: ['REAL-W-1'], company: 'UPS' });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1, error: null });
    const pushed = await pushedTracking(sandbox, tenant, 1);
    await waitFor(async () => (await fulfillmentsOf(tenant, placed.jobId))[0]?.status === 'completed', 20_000, 'tracking pushed');
    expect(await fulfillmentsOf(tenant, placed.jobId)).toHaveLength(1);
    expect(pushed).toHaveLength(1);
    expect(JSON.stringify(pushed[0]!.body)).toContain('REAL-W-1');
    expect(JSON.stringify(sandbox.fulfillmentsFor(tenant.reseller.shopDomain))).not.toContain('VOID-W-1');
  });
});
