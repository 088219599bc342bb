/**
 * Manual sync jobs and twin suppliers: two active suppliers of one reseller store whose vendor tags
 * fold alike (kept by Migration20261127041900, e.g. 'Straße' and 'STRAẞE'). Routing sends a line both
 * match to neither and reports it (orders.vendor-tags-folding-alike.test.ts); a job made by hand
 * must not place it either, or one manual POST per twin places the same lines twice.
 *
 * - `POST /v1/sync_jobs` for a supplier that has an active twin answers 409 `conflict`,
 *   `details.reason` `vendor_tag_ambiguous`, naming the suppliers that share the tag; nothing is
 *   created, nothing placed. An existing job is still returned (200): the POST stays idempotent.
 * - A manual job made before its supplier had a twin (an older service) places nothing when it runs
 *   while the twin is active: the attempt fails with the reason and the job ends `dead` on the
 *   reseller's to-do list; once one twin is deleted, a retry places it.
 */
import { describe, expect } from 'vitest';
import { expectError } from './support/assertions.ts';
import { queryRows } from './support/database.ts';
import { test as it } from './support/fixtures.ts';
import { addSupplier, createJob, getJob, lineOf, newOrderId, openShop, orderPosts, seedResellerOrder, settled, waitForJob } from './support/sync-jobs.ts';

/** What an older service stored: the tag as given, the key by one upper-then-lower round (no NFKC). */
async function storedByOldFold(databaseUrl: string, sourceStoreId: string, vendorTag: string): Promise<void> {
  await queryRows(databaseUrl, 'update source_stores set vendor_tag = $2, vendor_key = $3 where id = $1', [sourceStoreId, vendorTag, vendorTag.toUpperCase().toLowerCase().trim()]);
}

describe('a manual job for a supplier whose vendor tag another active supplier shares once folded', () => {
  it('is refused for either twin (409 vendor_tag_ambiguous), nothing is placed, and other suppliers still take manual jobs', async ({ service, api, sandbox }) => {
    const shop = await openShop(api);
    const first = await addSupplier(api, shop, { vendorTag: 'Straße' });
    const second = await addSupplier(api, shop, { vendorTag: 'Placeholder' });
    const other = await addSupplier(api, shop, { vendorTag: 'Kiosk' });
    await storedByOldFold(service.databaseUrl, second.id, 'STRAẞE');
    const orderId = seedResellerOrder(sandbox, shop, [lineOf('Strasse', { sku: 'S-1' }), lineOf('Kiosk', { sku: 'K-1' })]);

    for (const supplier of [first, second]) {
      const response = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: supplier.id, external_order_id: orderId } });
      expectError(response, 409, 'conflict');
      expect(response.body.error.param).toBe('source_store_id');
      expect(response.body.error.details).toEqual({ reason: 'vendor_tag_ambiguous', sourceStoreIds: [first.id, second.id].sort() });
    }
    // No job, no audit entry, no order on either twin (before the fix: one order on each).
    const jobs = await api.get(`/v1/sync_jobs?reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(jobs.body.data).toEqual([]);

    const kiosk = await createJob(api, shop.user.token, other.id, orderId);
    expect(await settled(api, shop.user.token, kiosk.id)).toMatchObject({ status: 'completed' });
    expect(orderPosts(sandbox, other.shopDomain)).toHaveLength(1);
    expect(orderPosts(sandbox, first.shopDomain)).toEqual([]);
    expect(orderPosts(sandbox, second.shopDomain)).toEqual([]);
  });

  it('made before the twin existed, places nothing while both are active, and is placed by a retry once one is deleted', async ({ service, api, sandbox }) => {
    const shop = await openShop(api);
    const first = await addSupplier(api, shop, { vendorTag: 'Straße' });
    // The storefront does not know the order yet: the job fails until it dies.
    const orderId = newOrderId();
    const job = await createJob(api, shop.user.token, first.id, orderId);
    const firstDeath = await settled(api, shop.user.token, job.id, 60_000);
    expect(firstDeath).toMatchObject({ status: 'dead' });

    // Then a twin appears (as the migration left them), and the order is on the storefront.
    const second = await addSupplier(api, shop, { vendorTag: 'Placeholder' });
    await storedByOldFold(service.databaseUrl, second.id, 'STRAẞE');
    seedResellerOrder(sandbox, shop, [lineOf('Strasse', { sku: 'S-1' })], orderId);

    // The existing job is still returned by a repeated POST (idempotent), and a new one for the twin is refused.
    const again = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: first.id, external_order_id: orderId } });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.id).toBe(job.id);
    const twin = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: second.id, external_order_id: orderId } });
    expectError(twin, 409, 'conflict');

    const retried = await api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    const dead = await waitForJob(api, shop.user.token, job.id, (j) => j.status === 'dead' && j.attempts > firstDeath.attempts, 60_000);
    expect(dead.errorMessage).toContain('vendor tag');
    expect(dead.errorMessage).toContain(second.id);
    expect(orderPosts(sandbox, first.shopDomain)).toEqual([]);
    // The reseller's to-do list shows it.
    const divergences = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(divergences.body.data).toEqual([expect.objectContaining({ type: 'job_dead', syncJobId: job.id })]);

    // One twin deleted: the retry places the order, once.
    const deleted = await api.delete(`/v1/reseller_stores/${shop.reseller.id}/source_stores/${second.id}`, { token: shop.user.token });
    expect(deleted.status).toBe(204);
    const placed = await api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token });
    expect(placed.status, JSON.stringify(placed.body)).toBe(200);
    expect(await waitForJob(api, shop.user.token, job.id, (j) => j.status === 'completed' || (j.status === 'dead' && j.attempts > dead.attempts), 60_000)).toMatchObject({ status: 'completed' });
    expect(orderPosts(sandbox, first.shopDomain)).toHaveLength(1);
    expect((await getJob(api, shop.user.token, job.id)).sourceOrderId).not.toBeNull();
  });
});
