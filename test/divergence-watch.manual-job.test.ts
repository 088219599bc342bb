/**
 * Review 6: the divergence watch and storefront orders whose only jobs were made by hand
 * (POST /v1/sync_jobs). order-changes.md: "a routed reseller order that the list shows cancelled is
 * treated as its orders/cancelled webhook"; orders the service does not know are left to
 * reconciliation. An order a reseller routed by hand (one from before the store was connected, which
 * reconciliation never lists; or with reconciliation off) has sync jobs and a supplier order, yet the
 * watch asked only `routed_orders`, which a manual job does not write: it took the order for unknown
 * and ignored its cancellation. Its orders/cancelled webhook lost, the supplier shipped an order the
 * customer had cancelled, and nobody was told. Its webhook, had it come, cancels it (the cancellation
 * finds the order's jobs, however they were made).
 */
import { describe, expect } from 'vitest';
import { PLATFORMS } from '../src/orders/types.ts';
import { test } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { auditOf, check, openTenant, type Target } from './support/watch.ts';

test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

let nextOrderNumber = 4_100_000 + Math.floor(Math.random() * 9_000) * 10;

describe.each(PLATFORMS)('%s storefront', (platform) => {
  it('an order routed by hand and listed cancelled is cancelled at its supplier, as its lost webhook would have', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, platform, ['custom']);
    const supplier = tenant.suppliers[0]!;
    // An order whose webhook never came (nothing posted to the service): the reseller routes it by hand.
    const n = nextOrderNumber++;
    const order = sandbox.buildOrderPayload(platform, {
      id: platform === 'custom' ? String(n) : n,
      lines: [{ sku: 'MAN-1', title: 'Manual', vendor: supplier.vendorTag, quantity: 1, price: '30.00' }],
      email: 'ada@example.com',
    });
    sandbox.seedOrder(tenant.reseller.shopDomain, platform, order);
    const created = await target.api.post('/v1/sync_jobs', { token: tenant.user.token, body: { source_store_id: supplier.id, external_order_id: String(order.id) } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const placed = await waitForJob(target.api, tenant.user.token, created.body.id, (job) => job.status === 'completed', 20_000);
    expect(placed.sourceOrderId).toBeTruthy();

    // The customer cancels; the orders/cancelled webhook is lost. A pass lists the order cancelled.
    sandbox.cancelOrder(tenant.reseller.shopDomain, platform, String(order.id));
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });

    expect(await auditOf(tenant, 'order.cancelled')).toEqual([{ resource_id: String(order.id), metadata: expect.objectContaining({ source: 'watch' }) }]);
    const job = await waitForJob(target.api, tenant.user.token, created.body.id, (current) => current.cancellations.length > 0 && current.cancellations[0].status === 'completed', 20_000);
    expect(job.cancellations[0]).toMatchObject({ outcome: 'cancelled', scope: 'order' });
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toMatchObject([{ orderId: placed.sourceOrderId }]);
  }, 60_000);
});

describe('custom storefront, a manual job whose supplier accepted its order, every answer lost (dead, in doubt)', () => {
  it('the order listed cancelled, its webhook lost: the supplier order its reference names is found and cancelled', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const n = nextOrderNumber++;
    const order = sandbox.buildOrderPayload('custom', {
      id: String(n),
      lines: [{ sku: 'MAN-2', title: 'Manual', vendor: supplier.vendorTag, quantity: 1, price: '30.00' }],
      email: 'ada@example.com',
    });
    sandbox.seedOrder(tenant.reseller.shopDomain, 'custom', order);
    // The supplier creates the order at the first attempt, then every answer is lost: the job dies not knowing it.
    sandbox.setFaults(supplier.shopDomain, { acceptThenDropNext: 4 });
    const created = await target.api.post('/v1/sync_jobs', { token: tenant.user.token, body: { source_store_id: supplier.id, external_order_id: String(order.id) } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(await waitForJob(target.api, tenant.user.token, created.body.id, (job) => job.status === 'dead', 20_000)).toMatchObject({ sourceOrderId: null });
    sandbox.clearFaults(supplier.shopDomain);
    const [held] = sandbox.ordersFor(supplier.shopDomain) as any[];
    expect(held).toBeDefined();

    // The customer cancels; the orders/cancelled webhook is lost. A pass lists the order cancelled.
    sandbox.cancelOrder(tenant.reseller.shopDomain, 'custom', String(order.id));
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    const job = await waitForJob(target.api, tenant.user.token, created.body.id, (current) => current.cancellations.length > 0 && current.cancellations[0].status === 'completed', 20_000);
    expect(job.cancellations[0]).toMatchObject({ outcome: 'cancelled', scope: 'order' });
    expect(job.sourceOrderId).toBe(String(held.id));
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toMatchObject([{ orderId: String(held.id) }]);
  }, 60_000);
});

