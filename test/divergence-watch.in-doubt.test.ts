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
import { auditOf, check, divergencesOf, eventsOf, fulfillmentsOf, openTenant, orderWithAnswersLost, placeOrder, pushedTracking, resellerPlatformFor, type Supplier, type Target, type Tenant } from './support/watch.ts';
import type { Sandbox } from './sandbox/server.ts';

// Passes run only when asked; failed jobs die fast; the sweep (which claims held tracking) runs often.
test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '300' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

const UPDATED_FIELD = { platform_a: 'updated_at', platform_b: 'date_modified_gmt', custom: 'updatedAt' } as const;
const updateTime = (platform: Platform, at: Date) => (platform === 'platform_b' ? at.toISOString().slice(0, 19) : at.toISOString());


/**
 * A reseller on the other platform with one supplier on `platform`, added an hour ago, and an order
 * of that supplier's whose job died with every answer lost: the supplier order exists, the job has
 * no id for it.
 */
async function orderInDoubt(sandbox: Sandbox, target: Target, platform: Platform): Promise<{ tenant: Tenant; supplier: Supplier; jobId: string; sourceOrderId: string }> {
  const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
  const supplier = tenant.suppliers[0]!;
  await queryRows(target.databaseUrl, "update source_stores set created_at = now() - interval '1 hour' where id = $1", [supplier.id]);
  const { jobId, sourceOrderId } = await orderWithAnswersLost(sandbox, tenant, supplier, 'wd');
  return { tenant, supplier, jobId, sourceOrderId };
}

/** The supplier order's last change, 20 minutes ago (what the supplier did then, with no webhook), and its other business now. */
async function twentyMinutesAgo(sandbox: Sandbox, tenant: Tenant, supplier: Supplier, sourceOrderId: string): Promise<void> {
  const changed = sandbox.orderOf(supplier.shopDomain, supplier.platform, sourceOrderId)!;
  sandbox.seedOrder(supplier.shopDomain, supplier.platform, { ...changed, [UPDATED_FIELD[supplier.platform]]: updateTime(supplier.platform, new Date(Date.now() - 20 * 60_000)) });
  // An order placed now moves the supplier's newest update, so the watermark, to now.
  await placeOrder(sandbox, tenant, supplier);
}

/** The reseller retries the dead job: the supplier gives back the same order (Idempotency-Key). */
async function retried(target: Target, tenant: Tenant, jobId: string, sourceOrderId: string): Promise<void> {
  const response = await target.api.post(`/v1/sync_jobs/${jobId}/retry`, { token: tenant.user.token });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  await waitFor(async () => {
    const [row] = await queryRows<{ status: string; source_order_id: string | null }>(target.databaseUrl, 'select status, source_order_id from sync_jobs where id = $1', [jobId]);
    return row?.status === 'completed' && row.source_order_id === sourceOrderId;
  }, 20_000, 'the retried job completed with the supplier order');
}

describe.each(PLATFORMS)('%s supplier', (platform) => {
  it('tracking a pass lists for the order of a job whose answers were lost reaches the customer when the job is retried after the watermark moved on', async ({ sandbox, target }) => {
    const { tenant, supplier, jobId, sourceOrderId } = await orderInDoubt(sandbox, target, platform);
    // The supplier ships it, and its fulfillments/create webhook is lost.
    sandbox.shipOrder(supplier.shopDomain, platform, sourceOrderId, { trackingNumbers: ['IN-DOUBT-1'] });
    await twentyMinutesAgo(sandbox, tenant, supplier, sourceOrderId);
    // A pass lists the shipped order (its reference names the dead job) and the watermark moves to now.
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    await retried(target, tenant, jobId, sourceOrderId);
    // Later passes list from the watermark less the overlap: the shipment, 20 minutes old, is not among them.
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });

    // The customer still gets the tracking, once.
    await waitFor(async () => (await fulfillmentsOf(tenant, jobId)).length === 1, 10_000, 'the tracking recorded for the retried job');
    const [pushed, ...others] = await pushedTracking(sandbox, tenant, 1);
    expect(others).toEqual([]);
    expect(JSON.stringify(pushed!.body)).toContain('IN-DOUBT-1');
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(await fulfillmentsOf(tenant, jobId)).toHaveLength(1);
  });

  it('a supplier cancellation a pass lists for the order of a job whose answers were lost is recorded on that job and joins the to-do list', async ({ sandbox, target }) => {
    const { tenant, supplier, jobId, sourceOrderId } = await orderInDoubt(sandbox, target, platform);
    // The supplier cancels it (out of stock, say), and its webhook is lost.
    sandbox.cancelOrder(supplier.shopDomain, platform, sourceOrderId);
    await twentyMinutesAgo(sandbox, tenant, supplier, sourceOrderId);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    // The job is retried and "completes" with the cancelled order; no later pass lists the cancellation again.
    await retried(target, tenant, jobId, sourceOrderId);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });

    const [job] = await queryRows<{ supplier_cancelled_at: Date | null }>(target.databaseUrl, 'select supplier_cancelled_at from sync_jobs where id = $1', [jobId]);
    expect(job!.supplier_cancelled_at).not.toBeNull();
    expect((await divergencesOf(tenant)).filter((entry) => entry.type === 'supplier_cancelled')).toEqual([expect.objectContaining({ syncJobId: jobId })]);
    expect(await auditOf(tenant, 'sync_job.supplier_cancelled')).toEqual([{ resource_id: jobId, metadata: expect.objectContaining({ source: 'watch', sourceOrderId }) }]);
  });
});

describe('a shipment a pass held for a job in doubt, claimed once the job learns its order', () => {
  it('is audited and announced fulfillment.reconciled (the watch found it), not as a webhook delivery', async ({ sandbox, target }) => {
    const { tenant, supplier, jobId, sourceOrderId } = await orderInDoubt(sandbox, target, 'custom');
    sandbox.shipOrder(supplier.shopDomain, 'custom', sourceOrderId, { trackingNumbers: ['HELD-RECON-1'] });
    await twentyMinutesAgo(sandbox, tenant, supplier, sourceOrderId);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    await retried(target, tenant, jobId, sourceOrderId);
    const [fulfillment] = await waitFor(async () => {
      const rows = await fulfillmentsOf(tenant, jobId);
      return rows.length === 1 ? rows : null;
    }, 10_000, 'the held tracking claimed by the retried job');
    await pushedTracking(sandbox, tenant, 1);
    expect(await auditOf(tenant, 'fulfillment.reconciled')).toEqual([
      { resource_id: fulfillment!.id, metadata: expect.objectContaining({ syncJobId: jobId, trackingNumbers: ['HELD-RECON-1'], watchPassId: expect.any(String) }) },
    ]);
    expect((await eventsOf(tenant, 'fulfillment.reconciled')).map((event) => event.object.id)).toEqual([fulfillment!.id]);
  });
});
