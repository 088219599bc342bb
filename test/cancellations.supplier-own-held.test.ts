/**
 * A supplier's own cancellation of an order whose job is in doubt (order-changes.md, "A supplier's
 * own cancellation"): the job sent its order, the supplier accepted it, and every answer was lost,
 * so the job is dead with no supplier order id. The supplier then cancels that order and says so by
 * webhook. No job has recorded the order, so before, the webhook answered `syncJobIds: []` and kept
 * nothing: with the divergence watch off, the cancellation was lost and the reseller believed the
 * supplier would ship. It is held as a shipment would be (held_supplier_cancellations) and recorded
 * on the job once the job learns its order (here: the reseller retries it, and the supplier gives
 * back the same order), exactly as its webhook would have been: the job's supplierCancelledAt and
 * reason, the audit entry, the event, the to-do entry. The watch is off throughout.
 */
import { describe, expect } from 'vitest';
import { PLATFORMS, type Platform } from '../src/orders/types.ts';
import { sendWebhook, type Sandbox } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { getJob, waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { auditOf, divergencesOf, eventsOf, openTenant, orderWithAnswersLost, placeOrder, resellerPlatformFor, type Supplier, type Target, type Tenant } from './support/watch.ts';
import { FULFILLMENTS_PATH, uniqueSuffix } from './support/webhooks.ts';

// No divergence watch, no reconciliation: only the held cancellation can tell the reseller. Failed jobs die fast; the sweep runs often.
test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '300' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

const TOPIC = { platform_a: 'orders/cancelled', platform_b: 'orders/updated', custom: 'orders/cancelled' } as const;


/** A reseller with one supplier on `platform`, and an order of that supplier's whose job died with every answer lost. */
async function orderInDoubt(sandbox: Sandbox, target: Target, platform: Platform): Promise<{ tenant: Tenant; supplier: Supplier; jobId: string; sourceOrderId: string }> {
  const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
  const supplier = tenant.suppliers[0]!;
  const { jobId, sourceOrderId } = await orderWithAnswersLost(sandbox, tenant, supplier, 'sh');
  return { tenant, supplier, jobId, sourceOrderId };
}

/** The supplier cancels the order on its platform ("out of stock"); returns the body of its cancellation webhook. */
function supplierCancels(sandbox: Sandbox, supplier: Supplier, sourceOrderId: string): Record<string, unknown> {
  const cancelled = sandbox.cancelOrder(supplier.shopDomain, supplier.platform, sourceOrderId);
  const at = new Date().toISOString();
  switch (supplier.platform) {
    case 'platform_a':
      return { ...cancelled, cancelled_at: at, cancel_reason: 'inventory' };
    case 'platform_b':
      return cancelled;
    case 'custom':
      return { id: sourceOrderId, cancelledAt: at, reason: 'out of stock' };
  }
}

function deliverCancellation(tenant: Tenant, supplier: Supplier, payload: Record<string, unknown>, webhookId: string) {
  return sendWebhook({ targetUrl: `${tenant.target.url}${FULFILLMENTS_PATH}`, shopDomain: supplier.shopDomain, secret: supplier.secret, topic: TOPIC[supplier.platform], payload, webhookId });
}

const heldOf = (target: Target, sourceStoreId: string) =>
  queryRows<{ source_order_id: string }>(target.databaseUrl, 'select source_order_id from held_supplier_cancellations where source_store_id = $1', [sourceStoreId]);

describe.each(PLATFORMS)('%s supplier', (platform) => {
  it("a supplier's cancellation of the order of a job in doubt is recorded on the job once it learns the order, with the watch off", async ({ sandbox, target }) => {
    const { tenant, supplier, jobId, sourceOrderId } = await orderInDoubt(sandbox, target, platform);
    const payload = supplierCancels(sandbox, supplier, sourceOrderId);
    // Its webhook, then a redelivery of it, then the same cancellation under another webhook id: no job has the order yet.
    const webhookId = `wh_cancel_${uniqueSuffix()}`;
    for (const id of [webhookId, webhookId, `wh_cancel_other_${uniqueSuffix()}`]) {
      const answer = await deliverCancellation(tenant, supplier, payload, id);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body).toMatchObject({ received: true, syncJobIds: [] });
    }

    // The reseller retries the dead job: the supplier gives back the same (now cancelled) order.
    const retry = await tenant.target.api.post(`/v1/sync_jobs/${jobId}/retry`, { token: tenant.user.token });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    const job = await waitForJob(target.api, tenant.user.token, jobId, (j) => j.status === 'completed' && j.supplierCancelledAt !== null, 20_000, 'the retried job to record the held cancellation');
    expect(job.sourceOrderId).toBe(sourceOrderId);
    if (platform === 'platform_a') expect(job.supplierCancelReason).toBe('inventory');
    if (platform === 'custom') expect(job.supplierCancelReason).toBe('out of stock');

    // As the webhook would have recorded it on a job that knew its order: one audit entry, one event, one to-do entry.
    expect(await auditOf(tenant, 'sync_job.supplier_cancelled')).toEqual([
      { resource_id: jobId, metadata: expect.objectContaining({ source: 'webhook', topic: TOPIC[platform], webhookId, sourceOrderId, sourceStoreId: supplier.id }) },
    ]);
    const events = await eventsOf(tenant, 'sync_job.supplier_cancelled');
    expect(events).toHaveLength(1);
    expect(events[0]!.object).toMatchObject({ id: jobId, supplierCancelledAt: job.supplierCancelledAt });
    expect((await divergencesOf(tenant)).filter((entry) => entry.type === 'supplier_cancelled')).toEqual([expect.objectContaining({ syncJobId: jobId })]);
    // Nothing is kept once recorded.
    await waitFor(async () => (await heldOf(target, supplier.id)).length === 0, 5_000, 'the held cancellation to be deleted');

    // A late redelivery now finds the job, and records nothing twice.
    const late = await deliverCancellation(tenant, supplier, payload, webhookId);
    expect(late.body).toMatchObject({ received: true, syncJobIds: [jobId] });
    expect(await eventsOf(tenant, 'sync_job.supplier_cancelled')).toHaveLength(1);
    expect((await getJob(target.api, tenant.user.token, jobId)).supplierCancelledAt).toBe(job.supplierCancelledAt);
  }, 90_000);
});

describe("a supplier's cancellation of an order no job can own", () => {
  it('held while a job was in doubt, is forgotten once that job learns another order: its supplier order stays as it is', async ({ sandbox, target }) => {
    const { tenant, supplier, jobId, sourceOrderId } = await orderInDoubt(sandbox, target, 'custom');
    // The supplier cancels an order of its own (a direct sale) while the job is in doubt: it could be the job's.
    const otherOrderId = `own-sale-${uniqueSuffix()}`;
    const answer = await deliverCancellation(tenant, supplier, { id: otherOrderId, cancelledAt: new Date().toISOString(), reason: 'direct sale cancelled' }, `wh_own_${uniqueSuffix()}`);
    expect(answer.body).toMatchObject({ received: true, syncJobIds: [] });
    expect(await heldOf(target, supplier.id)).toEqual([{ source_order_id: otherOrderId }]);

    const retry = await tenant.target.api.post(`/v1/sync_jobs/${jobId}/retry`, { token: tenant.user.token });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    await waitForJob(target.api, tenant.user.token, jobId, (j) => j.status === 'completed' && j.sourceOrderId === sourceOrderId, 20_000);
    await waitFor(async () => (await heldOf(target, supplier.id)).length === 0, 5_000, 'the held cancellation to be forgotten');
    expect((await getJob(target.api, tenant.user.token, jobId)).supplierCancelledAt).toBeNull();
    expect(await auditOf(tenant, 'sync_job.supplier_cancelled')).toEqual([]);
  }, 90_000);

  it('is not held (the supplier\'s own sale) and changes nothing', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const supplier = tenant.suppliers[0]!;
    // A placed order: its job knows its order, so it is in doubt about nothing.
    await placeOrder(sandbox, tenant, supplier);
    const answer = await deliverCancellation(tenant, supplier, { id: `own-sale-${uniqueSuffix()}`, cancelledAt: new Date().toISOString() }, `wh_own_${uniqueSuffix()}`);
    expect(answer.body).toMatchObject({ received: true, syncJobIds: [] });
    expect(await heldOf(target, supplier.id)).toEqual([]);
    expect(await auditOf(tenant, 'sync_job.supplier_cancelled')).toEqual([]);
  });
});
