/**
 * A supplier's fulfillment whose tracking number comes after the fulfillment itself.
 * platform_a suppliers fulfil first and add the carrier's number later, on the same fulfillment (its
 * id unchanged). order-changes.md: the divergence watch pushes "fulfillments or tracking numbers
 * that no fulfillment webhook brought", exactly as their webhook would have been.
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { test } from './support/fixtures.ts';
import { queryRows } from './support/database.ts';
import { settled } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { check, deliverFulfillment, divergencesOf, fulfillmentsOf, openTenant, placeOrder, type Target } from './support/watch.ts';

test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

describe.each(['custom', 'platform_a'] as Platform[])('a platform_a fulfillment whose tracking number is added later, %s storefront', (resellerPlatform) => {
  it('reaches the customer once through the divergence watch, and a redelivery or the next pass adds nothing', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatform, ['platform_a']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);

    // The supplier fulfils the order with no number yet; its webhook arrives.
    const [body] = sandbox.shipOrder(supplier.shopDomain, 'platform_a', placed.sourceOrderId, { trackingNumbers: [] });
    const delivered = await deliverFulfillment(tenant, supplier, body!, `wh-first-${placed.jobId}`);
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
    expect((delivered.body as any).syncJobIds).toEqual([placed.jobId]);
    // skipped where the storefront needs a number; pushed without one where it does not.
    const expected = resellerPlatform === 'custom' ? 'skipped' : 'completed';
    await waitFor(async () => (await fulfillmentsOf(tenant, placed.jobId))[0]?.status === expected, 20_000, `first fulfillment ${expected}`);
    const pushedBefore = sandbox.fulfillmentsFor(tenant.reseller.shopDomain).length;

    // Later the supplier adds the carrier's number to that same fulfillment (no new webhook topic for it).
    const order = sandbox.orderOf(supplier.shopDomain, 'platform_a', placed.sourceOrderId)!;
    const [fulfillment] = order.fulfillments as Record<string, unknown>[];
    sandbox.seedOrder(supplier.shopDomain, 'platform_a', {
      ...order,
      fulfillments: [{ ...fulfillment, tracking_company: 'UPS', tracking_number: '1Z-LATER-1', tracking_numbers: ['1Z-LATER-1'], tracking_url: 'https://ups.example/1Z-LATER-1', tracking_urls: ['https://ups.example/1Z-LATER-1'] }],
    });

    const pass = await check(tenant);
    expect(pass).toMatchObject({ status: 'succeeded', error: null });
    const pushed = await waitFor(async () => {
      const sent = sandbox.fulfillmentsFor(tenant.reseller.shopDomain).filter((entry) => JSON.stringify(entry.payload).includes('1Z-LATER-1'));
      return sent.length > 0 ? sent : null;
    }, 20_000, 'the tracking number added later to reach the storefront order');
    expect(pushed).toHaveLength(1);

    // The original webhook redelivered (now carrying the number), and another pass: nothing more.
    const again = await deliverFulfillment(tenant, supplier, { ...body!, tracking_number: '1Z-LATER-1', tracking_numbers: ['1Z-LATER-1'] }, `wh-first-${placed.jobId}`);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const replay = await deliverFulfillment(tenant, supplier, { ...body!, tracking_number: '1Z-LATER-1', tracking_numbers: ['1Z-LATER-1'] });
    expect(replay.status, JSON.stringify(replay.body)).toBe(200);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    await waitFor(async () => (await fulfillmentsOf(tenant, placed.jobId)).every((row) => row.status === 'completed' || row.status === 'skipped'), 20_000, 'every fulfillment settled');
    expect(await fulfillmentsOf(tenant, placed.jobId)).toHaveLength(2);
    expect(sandbox.fulfillmentsFor(tenant.reseller.shopDomain)).toHaveLength(pushedBefore + 1);
    expect((await divergencesOf(tenant)).filter((entry) => entry.type === 'fulfillment_dead')).toEqual([]);
  });
});

describe('a platform_a fulfillment of an order in doubt whose tracking number is added later', () => {
  it('is held with the number the watch finds, and the number reaches the customer once the job completes', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['platform_a']);
    const supplier = tenant.suppliers[0]!;
    // The supplier accepts the order, then every answer is lost: the job dies without its order id.
    sandbox.setFaults(supplier.shopDomain, { acceptThenDropNext: 4 });
    const externalOrderId = `wo-held-${Date.now()}`;
    const order = sandbox.buildOrderPayload('custom', { id: externalOrderId, lines: [{ sku: 'HLD-1', title: 'Held', vendor: supplier.vendorTag, quantity: 1, price: '30.00' }] });
    expect(await sandbox.placeCustomerOrder(tenant.reseller.shopDomain, 'custom', order)).toMatchObject({ delivered: { status: 200 } });
    const jobId = await waitFor(async () => {
      const [row] = await queryRows<{ id: string }>(target.databaseUrl, 'select id from sync_jobs where reseller_store_id = $1 and external_order_id = $2', [tenant.reseller.id, externalOrderId]);
      return row?.id ?? null;
    }, 20_000, 'the job');
    expect(await settled(target.api, tenant.user.token, jobId, 30_000)).toMatchObject({ status: 'dead', sourceOrderId: null });
    sandbox.clearFaults(supplier.shopDomain);
    const [placed] = sandbox.ordersFor(supplier.shopDomain);
    const sourceOrderId = String(placed!.id);

    // Fulfilled with no number yet: its webhook is held for the job in doubt.
    const [body] = sandbox.shipOrder(supplier.shopDomain, 'platform_a', sourceOrderId, { trackingNumbers: [] });
    expect((await deliverFulfillment(tenant, supplier, body!)).status).toBe(200);
    // The carrier's number is added to that fulfillment; a pass finds it on the order its reference names.
    const shipped = sandbox.orderOf(supplier.shopDomain, 'platform_a', sourceOrderId)!;
    const [fulfillment] = shipped.fulfillments as Record<string, unknown>[];
    sandbox.seedOrder(supplier.shopDomain, 'platform_a', { ...shipped, fulfillments: [{ ...fulfillment, tracking_number: '1Z-HELD-1', tracking_numbers: ['1Z-HELD-1'] }] });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });

    // An operator retries the job: it gets its order back, and the held fulfillment is claimed.
    expect((await target.api.post(`/v1/sync_jobs/${jobId}/retry`, { token: tenant.user.token })).status).toBe(200);
    expect(await settled(target.api, tenant.user.token, jobId, 30_000)).toMatchObject({ status: 'completed', sourceOrderId });
    await waitFor(async () => (await fulfillmentsOf(tenant, jobId)).some((row) => row.status === 'completed' || row.status === 'skipped'), 20_000, 'the held fulfillment claimed');
    const pushed = await waitFor(async () => {
      const sent = sandbox.fulfillmentsFor(tenant.reseller.shopDomain).filter((entry) => JSON.stringify(entry.payload).includes('1Z-HELD-1'));
      return sent.length > 0 ? sent : null;
    }, 20_000, 'the tracking number to reach the storefront order');
    expect(pushed).toHaveLength(1);
    expect(await fulfillmentsOf(tenant, jobId)).toHaveLength(1);
  });
});
