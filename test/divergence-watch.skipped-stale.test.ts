/**
 * A shipment the storefront never received is not tracking. A fulfillment with no
 * tracking number, for a storefront platform that needs one (custom, platform_b), is recorded
 * `skipped` and never sent (operations.md): the customer has no tracking. order-changes.md: a job
 * placed more than STALE_AFTER_MS ago with "no tracking yet" is stale, on the reseller's to-do list,
 * until tracking arrives.
 */
import { describe, expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { sendStorefrontWebhook } from './support/cancellations.ts';
import { auditOf, check, deliverFulfillment, divergencesOf, eventsOf, fulfillmentsOf, openTenant, placeOrder, type Target } from './support/watch.ts';

test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

const backdate = (target: Target, jobId: string) => queryRows(target.databaseUrl, "update sync_jobs set completed_at = now() - interval '8 days' where id = $1", [jobId]);

describe('a job whose only shipment was skipped (no tracking number for a custom storefront)', () => {
  it('is stale once STALE_AFTER_MS has passed, and stays stale when another numberless shipment comes', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const skipped = await placeOrder(sandbox, tenant, supplier);
    const alreadyStale = await placeOrder(sandbox, tenant, supplier);

    const [body] = sandbox.shipOrder(supplier.shopDomain, 'custom', skipped.sourceOrderId, { trackingNumbers: [], trackingUrls: ['https://courier.example/parcel/1'] });
    expect((await deliverFulfillment(tenant, supplier, body!)).status).toBe(200);
    await waitFor(async () => (await fulfillmentsOf(tenant, skipped.jobId))[0]?.status === 'skipped', 20_000, 'the shipment skipped');
    expect(sandbox.fulfillmentsFor(tenant.reseller.shopDomain)).toEqual([]);

    await backdate(target, skipped.jobId);
    await backdate(target, alreadyStale.jobId);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    const stale = (await divergencesOf(tenant)).filter((entry) => entry.type === 'stale').map((entry) => entry.syncJobId);
    expect(stale.sort()).toEqual([skipped.jobId, alreadyStale.jobId].sort());

    // A numberless shipment of the stale job: still nothing reached the customer, so it stays on the list.
    const [other] = sandbox.shipOrder(supplier.shopDomain, 'custom', alreadyStale.sourceOrderId, { trackingNumbers: [], trackingUrls: ['https://courier.example/parcel/2'] });
    expect((await deliverFulfillment(tenant, supplier, other!)).status).toBe(200);
    await waitFor(async () => (await fulfillmentsOf(tenant, alreadyStale.jobId))[0]?.status === 'skipped', 20_000, 'the second shipment skipped');
    expect((await divergencesOf(tenant)).filter((entry) => entry.type === 'stale').map((entry) => entry.syncJobId).sort()).toEqual([skipped.jobId, alreadyStale.jobId].sort());
  });
});

describe('a stale job whose storefront order was cancelled, then shipped anyway with no tracking number', () => {
  it('is stale once: the entry resolved by the cancellation is not raised again when the shipment makes it too_late', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    await backdate(target, placed.jobId);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    expect((await auditOf(tenant, 'sync_job.stale')).map((entry) => entry.resource_id)).toEqual([placed.jobId]);

    // The customer cancels the whole order; the supplier order is cancelled, and the stale entry with it.
    const cancelled = await sendStorefrontWebhook(target.url, tenant, 'orders/cancelled', { id: placed.externalOrderId, cancelledAt: new Date().toISOString() });
    expect(cancelled.status).toBe(200);
    const outcomeOf = async () => (await queryRows<{ outcome: string | null }>(target.databaseUrl, 'select outcome from cancellations where sync_job_id = $1', [placed.jobId]))[0]?.outcome;
    await waitFor(async () => (await outcomeOf()) === 'cancelled', 20_000, 'the supplier order cancelled');
    expect((await divergencesOf(tenant)).filter((entry) => entry.type === 'stale')).toEqual([]);

    // The supplier ships it all the same, with no tracking number: recorded skipped, the cancellation too late.
    const [body] = sandbox.shipOrder(supplier.shopDomain, 'custom', placed.sourceOrderId, { trackingNumbers: [], trackingUrls: ['https://courier.example/parcel/9'] });
    expect((await deliverFulfillment(tenant, supplier, body!)).status).toBe(200);
    await waitFor(async () => (await fulfillmentsOf(tenant, placed.jobId))[0]?.status === 'skipped', 20_000, 'the shipment skipped');
    await waitFor(async () => (await outcomeOf()) === 'too_late', 20_000, 'the cancellation too late');

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    expect((await auditOf(tenant, 'sync_job.stale')).map((entry) => entry.resource_id)).toEqual([placed.jobId]);
    expect((await eventsOf(tenant, 'sync_job.stale')).map((event) => event.object.id)).toEqual([placed.jobId]);
  });
});
