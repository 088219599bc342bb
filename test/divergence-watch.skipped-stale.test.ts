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
import { check, deliverFulfillment, divergencesOf, fulfillmentsOf, openTenant, placeOrder, type Target } from './support/watch.ts';

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
