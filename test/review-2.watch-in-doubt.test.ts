/**
 * Review 2: the divergence watch and orders whose creation answer was lost (order-changes.md, "The
 * divergence watch"; platforms.md: every order the service places carries its reference, "that is how
 * an order whose creation answer was lost is found again"). A job whose answers were all lost is dead
 * with no supplier order id, yet its supplier order exists, and the supplier may ship it with no
 * webhook. A pass lists that order (its reference names the job) and must not drop its tracking: the
 * job is retried later, after the watermark has moved past the shipment, and no later pass lists it.
 */
import { describe, expect } from 'vitest';
import { PLATFORMS, type Platform } from '../src/orders/types.ts';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { check, fulfillmentsOf, openTenant, placeOrder, pushedTracking, type Target } from './support/watch.ts';

// Passes run only when asked; failed jobs die fast; the sweep (which claims held tracking) runs often.
test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '300' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

const resellerPlatformFor = (supplier: Platform): Platform => (supplier === 'platform_a' ? 'custom' : 'platform_a');
const UPDATED_FIELD = { platform_a: 'updated_at', platform_b: 'date_modified_gmt', custom: 'updatedAt' } as const;
const updateTime = (platform: Platform, at: Date) => (platform === 'platform_b' ? at.toISOString().slice(0, 19) : at.toISOString());

let nextOrderNumber = 970_000 + Math.floor(Math.random() * 9_000) * 10;

describe.each(PLATFORMS)('%s supplier', (platform) => {
  it('tracking a pass lists for the order of a job whose answers were lost reaches the customer when the job is retried after the watermark moved on', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
    const supplier = tenant.suppliers[0]!;
    // The supplier store was added an hour ago (its history since then is the watch's to read).
    await queryRows(target.databaseUrl, "update source_stores set created_at = now() - interval '1 hour' where id = $1", [supplier.id]);

    // The supplier accepts the order, then every answer (the first and the three idempotent replays) is lost: dead, no order id.
    sandbox.setFaults(supplier.shopDomain, { acceptThenDropNext: 4 });
    const n = nextOrderNumber++;
    const order = sandbox.buildOrderPayload(tenant.reseller.platform, {
      id: tenant.reseller.platform === 'custom' ? `wd-${n}` : n,
      lines: [{ sku: 'DOUBT-1', title: 'Doubt', vendor: supplier.vendorTag, quantity: 1, price: '30.00' }],
      email: 'ada@example.com',
    });
    expect(await sandbox.placeCustomerOrder(tenant.reseller.shopDomain, tenant.reseller.platform, order)).toMatchObject({ delivered: { status: 200 } });
    const job = await waitFor(async () => {
      const [row] = await queryRows<{ id: string; status: string; source_order_id: string | null }>(
        target.databaseUrl,
        'select id, status, source_order_id from sync_jobs where reseller_store_id = $1 and external_order_id = $2',
        [tenant.reseller.id, String(order.id)],
      );
      return row?.status === 'dead' ? row : null;
    }, 30_000, 'the job dead with its answers lost');
    expect(job.source_order_id).toBeNull();
    sandbox.clearFaults(supplier.shopDomain);
    const [supplierOrder, ...more] = sandbox.ordersFor(supplier.shopDomain);
    expect(more).toEqual([]);
    const sourceOrderId = String(supplierOrder!.id);

    // The supplier ships it, 20 minutes ago, and its fulfillments/create webhook is lost.
    sandbox.shipOrder(supplier.shopDomain, platform, sourceOrderId, { trackingNumbers: ['IN-DOUBT-1'] });
    const shipped = sandbox.orderOf(supplier.shopDomain, platform, sourceOrderId)!;
    sandbox.seedOrder(supplier.shopDomain, platform, { ...shipped, [UPDATED_FIELD[platform]]: updateTime(platform, new Date(Date.now() - 20 * 60_000)) });
    // The supplier's other business goes on: an order placed now moves its newest update to now.
    await placeOrder(sandbox, tenant, supplier);

    // A pass lists the shipped order (its reference names the dead job) and the watermark moves to now.
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });

    // The reseller retries the dead job: the supplier gives back the same order (Idempotency-Key).
    const retried = await target.api.post(`/v1/sync_jobs/${job.id}/retry`, { token: tenant.user.token });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    await waitFor(async () => {
      const [row] = await queryRows<{ status: string; source_order_id: string | null }>(target.databaseUrl, 'select status, source_order_id from sync_jobs where id = $1', [job.id]);
      return row?.status === 'completed' && row.source_order_id === sourceOrderId;
    }, 20_000, 'the retried job completed with the supplier order');
    // Later passes list from the watermark less the overlap: the shipment, 20 minutes old, is not among them.
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });

    // The customer still gets the tracking, once.
    await waitFor(async () => (await fulfillmentsOf(tenant, job.id)).length === 1, 10_000, 'the tracking recorded for the retried job');
    const [pushed, ...others] = await pushedTracking(sandbox, tenant, 1);
    expect(others).toEqual([]);
    expect(JSON.stringify(pushed!.body)).toContain('IN-DOUBT-1');
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(await fulfillmentsOf(tenant, job.id)).toHaveLength(1);
  });
});
