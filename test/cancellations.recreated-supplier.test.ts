/**
 * A supplier record deleted and re-created for the same shop (the case of
 * test/fulfillments.recreated-supplier.test.ts): the orders placed through the deleted record are
 * still open at the supplier. The customer then cancels such an order on the storefront
 * (order-changes.md: each affected job's supplier order is cancelled). The job's source store is the
 * deleted record, so the cancellation found no supplier store to call ("the source store was
 * deleted"), failed at every attempt and died: the supplier shipped what the customer had cancelled,
 * and retrying the cancellation by hand could never succeed. The active record of the same supplier
 * (same reseller store, owner, platform and shop domain) now answers for it, as it already does for
 * the supplier's tracking and cancellations.
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { sendWebhook } from './sandbox/server.ts';
import { createSourceStore, registerUser, createResellerStore } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { auditOf, openTenant, placeOrder, recreateSupplier, type Target, type Tenant } from './support/watch.ts';
import { ORDERS_PATH } from './support/webhooks.ts';

test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });

const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

/** The customer cancels the whole order on the (platform_a) storefront. */
function storefrontCancels(sandbox: { buildOrderPayload: (platform: Platform, input: any) => any }, tenant: Tenant, externalOrderId: string) {
  const order = sandbox.buildOrderPayload('platform_a', { id: Number(externalOrderId), lines: [] }) as Record<string, unknown>;
  return sendWebhook({
    targetUrl: `${tenant.target.url}${ORDERS_PATH}`,
    shopDomain: tenant.reseller.shopDomain,
    secret: tenant.reseller.secret,
    topic: 'orders/cancelled',
    payload: { ...order, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' },
  });
}

const supplierStatus = (order: any, platform: Platform) => (platform === 'custom' ? order.status : order.cancelled_at ? 'cancelled' : 'open');

describe.each(['custom', 'platform_a'] as const)('a %s supplier deleted and re-created with the same shop domain', (platform) => {
  it("a storefront cancellation of an order placed through the deleted record cancels the supplier's order", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', [platform]);
    const placed = await placeOrder(sandbox, tenant, tenant.suppliers[0]!);
    const again = await recreateSupplier(tenant, tenant.suppliers[0]!);

    const cancelled = await storefrontCancels(sandbox, tenant, placed.externalOrderId);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    const job = await waitForJob(
      target.api,
      tenant.user.token,
      placed.jobId,
      (j) => j.cancellations[0]?.status === 'completed' || j.cancellations[0]?.status === 'dead',
      30_000,
      'the cancellation to end',
    );
    expect(job.cancellations[0], JSON.stringify(job.cancellations)).toMatchObject({ status: 'completed', outcome: 'cancelled' });
    expect(supplierStatus(sandbox.orderOf(tenant.suppliers[0]!.shopDomain, platform, placed.sourceOrderId), platform)).toBe('cancelled');
    // The audit entry names the record whose token the cancellation went through; the job's own still names the deleted one.
    const [completed, ...more] = await auditOf(tenant, 'cancellation.completed');
    expect(more).toEqual([]);
    expect(completed).toMatchObject({ resource_id: job.cancellations[0]!.id, metadata: { syncJobId: placed.jobId, outcome: 'cancelled', answeredBySourceStoreId: again.id } });
    expect((await auditOf(tenant, 'sync_job.completed')).map((entry) => entry.metadata)).toEqual([
      expect.objectContaining({ sourceStoreId: tenant.suppliers[0]!.id }),
    ]);
    expect((await auditOf(tenant, 'sync_job.completed'))[0]!.metadata).not.toHaveProperty('answeredBySourceStoreId');
  }, 60_000);
});

describe("another tenant's record of the same supplier", () => {
  it('never cancels for a deleted record that is not its own', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    const deleted = await target.api.delete(`/v1/reseller_stores/${tenant.reseller.id}/source_stores/${supplier.id}`, { token: tenant.user.token });
    expect(deleted.status).toBe(204);
    // Another user's and another storefront's active records of the same supplier shop: never used for this job.
    const stranger = await registerUser(target.api);
    const strangerStore = await createResellerStore(target.api, stranger.token);
    await createSourceStore(target.api, stranger.token, strangerStore.id, { platform: 'custom', shopDomain: supplier.shopDomain, vendorTag: supplier.vendorTag });
    const ownOther = await createResellerStore(target.api, tenant.user.token);
    await createSourceStore(target.api, tenant.user.token, ownOther.id, { platform: 'custom', shopDomain: supplier.shopDomain, vendorTag: supplier.vendorTag });

    const cancelled = await storefrontCancels(sandbox, tenant, placed.externalOrderId);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    const job = await waitForJob(target.api, tenant.user.token, placed.jobId, (j) => j.cancellations[0]?.attempts >= 1 && j.cancellations[0]?.status !== 'processing', 30_000, 'an attempt');
    expect(job.cancellations[0]).not.toMatchObject({ outcome: 'cancelled' });
    expect(supplierStatus(sandbox.orderOf(supplier.shopDomain, 'custom', placed.sourceOrderId), 'custom')).toBe('open');
  }, 60_000);
});
