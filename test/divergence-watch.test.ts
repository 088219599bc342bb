/**
 * The divergence watch end to end on the real queue, database and sandbox: suppliers ship or cancel
 * orders with no webhook, storefronts cancel routed orders, and a pass (POST …/divergence_checks)
 * lists each store's updated orders through its platform's paging and repairs or records what it finds.
 */
import pg from 'pg';
import { describe, expect } from 'vitest';
import { PLATFORMS, type Platform } from '../src/orders/types.ts';
import { expectError } from './support/assertions.ts';
import { queryRows } from './support/database.ts';
import { registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { sendWebhook, type Sandbox } from './sandbox/server.ts';
import { waitFor } from './support/wait.ts';
import { ORDERS_PATH } from './support/webhooks.ts';
import {
  auditOf,
  check,
  deliverFulfillment,
  divergencesOf,
  eventsOf,
  finishedPass,
  fulfillmentsOf,
  openTenant,
  placeOrder,
  placedJobOf,
  pushedTracking,
  requestCheck,
  watermarkOf,
  type Target,
  type Tenant,
} from './support/watch.ts';

// Passes run only when asked; failed jobs die fast.
test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

const resellerPlatformFor = (supplier: Platform): Platform => (supplier === 'platform_a' ? 'custom' : 'platform_a');

/** The storefront's cancellation webhook of an order it cancelled (`cancelled`: the order as the sandbox has it now), as `platform` sends it. */
function cancelledWebhook(platform: Platform, externalOrderId: string, cancelled: unknown): { topic: string; payload: unknown } {
  if (platform === 'custom') return { topic: 'orders/cancelled', payload: { id: externalOrderId, cancelledAt: new Date().toISOString() } };
  return { topic: platform === 'platform_b' ? 'orders/updated' : 'orders/cancelled', payload: cancelled };
}

describe.each(PLATFORMS)('%s supplier', (platform) => {
  it('tracking shipped with no webhook is pushed once by a pass; a late webhook and the next pass push nothing more', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    const untouched = await placeOrder(sandbox, tenant, supplier);
    const [webhookBody] = sandbox.shipOrder(supplier.shopDomain, platform, placed.sourceOrderId, { trackingNumbers: ['1Z-WATCH-1'], trackingUrls: ['https://track.example/1Z-WATCH-1'], company: 'UPS' });

    const pass = await check(tenant);
    expect(pass).toMatchObject({ status: 'succeeded', repairs: 1, error: null });
    const [fulfillment] = await fulfillmentsOf(tenant, placed.jobId);
    expect(fulfillment).toBeDefined();
    expect(await fulfillmentsOf(tenant, untouched.jobId)).toEqual([]);
    const [pushed] = await pushedTracking(sandbox, tenant, 1);
    expect(JSON.stringify(pushed!.body)).toContain('1Z-WATCH-1');
    expect(await auditOf(tenant, 'fulfillment.reconciled')).toEqual([
      { resource_id: fulfillment!.id, metadata: expect.objectContaining({ syncJobId: placed.jobId, watchPassId: pass.id, trackingNumbers: ['1Z-WATCH-1'] }) },
    ]);
    const events = await eventsOf(tenant, 'fulfillment.reconciled');
    expect(events.map((event) => event.object.id)).toEqual([fulfillment!.id]);
    expect(events[0]!.object.syncJobId).toBe(placed.jobId);

    // The lost webhook arrives after all: the same shipment, recognised, pushes nothing more.
    const late = await deliverFulfillment(tenant, supplier, webhookBody!);
    expect(late.status, JSON.stringify(late.body)).toBe(200);
    expect((late.body as any).syncJobIds).toEqual([placed.jobId]);
    // And the next pass (relisting the overlap) finds nothing new.
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(await fulfillmentsOf(tenant, placed.jobId)).toHaveLength(1);
    await waitFor(async () => (await fulfillmentsOf(tenant, placed.jobId))[0]?.status === 'completed', 20_000, 'tracking pushed');
    expect(sandbox.fulfillmentsFor(tenant.reseller.shopDomain)).toHaveLength(1);
  });

  it('a shipment whose webhook came first is not pushed again by a pass; a webhook and a pass at once push it once', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
    const supplier = tenant.suppliers[0]!;
    const first = await placeOrder(sandbox, tenant, supplier);
    const second = await placeOrder(sandbox, tenant, supplier);
    const [firstBody] = sandbox.shipOrder(supplier.shopDomain, platform, first.sourceOrderId, { trackingNumbers: ['TRK-FIRST'] });
    expect((await deliverFulfillment(tenant, supplier, firstBody!)).status).toBe(200);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(await fulfillmentsOf(tenant, first.jobId)).toHaveLength(1);

    const [secondBody] = sandbox.shipOrder(supplier.shopDomain, platform, second.sourceOrderId, { trackingNumbers: ['TRK-SECOND'] });
    const [webhook, pass] = await Promise.all([deliverFulfillment(tenant, supplier, secondBody!), check(tenant)]);
    expect(webhook.status).toBe(200);
    expect(pass.status).toBe('succeeded');
    expect(await fulfillmentsOf(tenant, second.jobId)).toHaveLength(1);
    await pushedTracking(sandbox, tenant, 2);
    await waitFor(async () => (await fulfillmentsOf(tenant, second.jobId))[0]?.status === 'completed', 20_000, 'tracking pushed');
    expect(sandbox.fulfillmentsFor(tenant.reseller.shopDomain)).toHaveLength(2);
  });

  it('a supplier cancellation with no webhook joins the to-do list once; dismissed, it is not raised again', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    sandbox.cancelOrder(supplier.shopDomain, platform, placed.sourceOrderId);

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    const [entry, ...others] = await divergencesOf(tenant);
    expect(others).toEqual([]);
    expect(entry).toMatchObject({ object: 'divergence', type: 'supplier_cancelled', status: 'open', syncJobId: placed.jobId, subjectId: placed.jobId, resellerStoreId: tenant.reseller.id });
    const [routed] = await queryRows<{ external_order_id: string }>(target.databaseUrl, 'select external_order_id from sync_jobs where id = $1', [placed.jobId]);
    // The entry names the storefront order, so a to-do list can say which order without reading the job.
    expect(entry.externalOrderId).toBe(routed!.external_order_id);
    expect(entry.id).toMatch(/^div_[0-9a-f]{32}$/);
    // Recorded exactly as the supplier's cancellation webhook records it, on the job.
    expect(await auditOf(tenant, 'sync_job.supplier_cancelled')).toEqual([{ resource_id: placed.jobId, metadata: expect.objectContaining({ source: 'watch', sourceOrderId: placed.sourceOrderId }) }]);
    const [job] = await queryRows<{ supplier_cancelled_at: Date | null }>(target.databaseUrl, 'select supplier_cancelled_at from sync_jobs where id = $1', [placed.jobId]);
    expect(job!.supplier_cancelled_at).not.toBeNull();
    const stats = await tenant.target.api.get(`/v1/reseller_stores/${tenant.reseller.id}/stats`, { token: tenant.user.token });
    expect(stats.body.attention).toEqual({ too_late: 0, unsupported: 0, supplier_cancelled: 1, stale: 0, cancellation_dead: 0, job_dead: 0, fulfillment_dead: 0 });

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    const dismissed = await tenant.target.api.post(`/v1/reseller_stores/${tenant.reseller.id}/divergences/${entry.id}/dismiss`, { token: tenant.user.token });
    expect(dismissed.status, JSON.stringify(dismissed.body)).toBe(200);
    expect(dismissed.body).toMatchObject({ id: entry.id, status: 'dismissed', externalOrderId: entry.externalOrderId, request_id: expect.any(String) });
    expect(dismissed.body.dismissedAt).not.toBeNull();
    expect(await divergencesOf(tenant)).toEqual([]);
    // The supplier's list still shows it cancelled (the next change relists it): not raised again.
    sandbox.cancelOrder(supplier.shopDomain, platform, placed.sourceOrderId);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(await divergencesOf(tenant)).toEqual([]);
  });

  it("the supplier's own sales are ignored", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
    const supplier = tenant.suppliers[0]!;
    await placeOrder(sandbox, tenant, supplier);
    const own = sandbox.directSaleFulfillment(supplier.shopDomain, platform, { trackingNumbers: ['OWN-TRK'] });
    const ownId = String(own.order_id ?? own.orderId);
    sandbox.shipOrder(supplier.shopDomain, platform, ownId, { trackingNumbers: ['OWN-TRK'] });
    sandbox.cancelOrder(supplier.shopDomain, platform, ownId);

    const pass = await check(tenant);
    expect(pass).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(pass.orders_seen).toBeGreaterThanOrEqual(2);
    expect(await divergencesOf(tenant)).toEqual([]);
    expect(await queryRows(target.databaseUrl, 'select id from fulfillments where reseller_store_id = $1', [tenant.reseller.id])).toEqual([]);
  });
});

describe.each(PLATFORMS)('%s storefront', (platform) => {
  it('a routed order listed cancelled is cancelled at its supplier once, as its webhook would; an unrouted one is left to reconciliation', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, platform, ['custom']);
    const placed = await placeOrder(sandbox, tenant, tenant.suppliers[0]!);
    const cancelled = sandbox.cancelOrder(tenant.reseller.shopDomain, platform, placed.externalOrderId);
    sandbox.setFaults(tenant.reseller.shopDomain, { dropWebhooksNext: 1 });
    const unrouted = sandbox.buildOrderPayload(platform, { id: platform === 'custom' ? 'wo-unrouted-1' : 990_001, lines: [{ sku: 'X', title: 'X', vendor: 'nobody', quantity: 1, price: '1.00' }] });
    await sandbox.placeCustomerOrder(tenant.reseller.shopDomain, platform, unrouted);
    sandbox.cancelOrder(tenant.reseller.shopDomain, platform, String(unrouted.id));

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    // The path of its orders/cancelled webhook: audited once, and the supplier order cancelled.
    expect(await auditOf(tenant, 'order.cancelled')).toEqual([{ resource_id: placed.externalOrderId, metadata: expect.objectContaining({ source: 'watch' }) }]);
    const supplier = tenant.suppliers[0]!;
    await waitFor(async () => sandbox.cancellationsFor(supplier.shopDomain).length === 1, 20_000, 'the supplier order cancelled');
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toMatchObject([{ orderId: placed.sourceOrderId }]);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(await auditOf(tenant, 'order.cancelled')).toHaveLength(1);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toHaveLength(1);
    // Its webhook, late: the same cancellation, answered with the job it reached and recorded no second time.
    const late = await sendWebhook({ targetUrl: `${tenant.target.url}${ORDERS_PATH}`, shopDomain: tenant.reseller.shopDomain, secret: tenant.reseller.secret, ...cancelledWebhook(platform, placed.externalOrderId, cancelled) });
    expect(late.status).toBe(200);
    expect(late.body).toMatchObject({ received: true, syncJobIds: [placed.jobId] });
    expect(await auditOf(tenant, 'order.cancelled')).toHaveLength(1);
    expect(await eventsOf(tenant, 'order.cancelled')).toHaveLength(1);
    // The watch stood in for that one webhook: another delivery (another webhook id) is a signal of its own, audited, cancelling nothing more.
    const another = await sendWebhook({ targetUrl: `${tenant.target.url}${ORDERS_PATH}`, shopDomain: tenant.reseller.shopDomain, secret: tenant.reseller.secret, ...cancelledWebhook(platform, placed.externalOrderId, cancelled) });
    expect(another.status).toBe(200);
    expect(await auditOf(tenant, 'order.cancelled')).toHaveLength(2);
    expect(await eventsOf(tenant, 'order.cancelled')).toHaveLength(2);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toHaveLength(1);
  });

  it('a cancellation whose webhook came first is no repair for a pass, and nothing is cancelled again', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, platform, ['custom']);
    const placed = await placeOrder(sandbox, tenant, tenant.suppliers[0]!);
    const supplier = tenant.suppliers[0]!;
    const cancelled = sandbox.cancelOrder(tenant.reseller.shopDomain, platform, placed.externalOrderId);
    const webhook = await sendWebhook({ targetUrl: `${tenant.target.url}${ORDERS_PATH}`, shopDomain: tenant.reseller.shopDomain, secret: tenant.reseller.secret, ...cancelledWebhook(platform, placed.externalOrderId, cancelled) });
    expect(webhook.body).toMatchObject({ received: true, syncJobIds: [placed.jobId] });
    await waitFor(async () => sandbox.cancellationsFor(supplier.shopDomain).length === 1, 20_000, 'the supplier order cancelled through the webhook');
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toHaveLength(1);
    // The pass found the same cancellation: recorded once, by the webhook (no audit entry or event of the watch's).
    expect(await auditOf(tenant, 'order.cancelled')).toEqual([{ resource_id: placed.externalOrderId, metadata: expect.not.objectContaining({ source: 'watch' }) }]);
    expect(await eventsOf(tenant, 'order.cancelled')).toMatchObject([{ object: { syncJobIds: [placed.jobId] } }]);
  });
});

describe('the to-do list', () => {
  it('a dead job is listed in the transaction of its death and resolved when its retry completes', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const supplier = tenant.suppliers[0]!;
    sandbox.setFaults(supplier.shopDomain, { alwaysFail: true, status: 503 });
    const order = sandbox.buildOrderPayload('platform_a', { id: 991_001, lines: [{ sku: 'D-1', title: 'D', vendor: supplier.vendorTag, quantity: 1, price: '5.00' }] });
    await sandbox.placeCustomerOrder(tenant.reseller.shopDomain, 'platform_a', order);
    const job = await waitFor(async () => {
      const [row] = await queryRows<{ id: string; status: string }>(target.databaseUrl, 'select id, status from sync_jobs where reseller_store_id = $1', [tenant.reseller.id]);
      return row?.status === 'dead' ? row : null;
    }, 30_000, 'dead job');
    const [entry] = await divergencesOf(tenant);
    expect(entry).toMatchObject({ type: 'job_dead', syncJobId: job.id, subjectId: job.id, status: 'open' });
    expect(entry.detail).toContain('503');

    sandbox.clearFaults(supplier.shopDomain);
    expect((await tenant.target.api.post(`/v1/sync_jobs/${job.id}/retry`, { token: tenant.user.token })).status).toBe(200);
    await waitFor(async () => (await divergencesOf(tenant)).length === 0, 20_000, 'job_dead resolved');
    const [row] = await queryRows<{ status: string; resolved_at: Date | null }>(target.databaseUrl, 'select status, resolved_at from divergences where id = $1', [entry.id]);
    expect(row).toMatchObject({ status: 'resolved' });
    expect(row!.resolved_at).not.toBeNull();
  });

  it('a dead fulfillment is listed in the transaction of its death, retried by hand, and resolved when that retry completes', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    sandbox.setFaults(tenant.reseller.shopDomain, { alwaysFail: true, status: 500 });
    const [body] = sandbox.shipOrder(supplier.shopDomain, 'custom', placed.sourceOrderId, { trackingNumbers: ['REVIVED-TRK'] });
    await deliverFulfillment(tenant, supplier, body!);
    const entry = await waitFor(async () => (await divergencesOf(tenant)).find((candidate) => candidate.type === 'fulfillment_dead'), 30_000, 'fulfillment_dead');
    const [fulfillment] = await fulfillmentsOf(tenant, placed.jobId);
    expect(entry).toMatchObject({ syncJobId: placed.jobId, subjectId: fulfillment!.id, status: 'open' });
    sandbox.clearFaults(tenant.reseller.shopDomain);
    const retryPath = `/v1/sync_jobs/${placed.jobId}/fulfillments/${fulfillment!.id}/retry`;
    const stranger = await registerUser(target.api);
    expect((await target.api.post(retryPath, { token: stranger.token })).status).toBe(404);
    const retried = await target.api.post(retryPath, { token: tenant.user.token });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body).toMatchObject({ id: placed.jobId, fulfillments: [{ id: fulfillment!.id, attempts: 4, errorMessage: null }] });
    await waitFor(async () => (await fulfillmentsOf(tenant, placed.jobId))[0]?.status === 'completed', 30_000, 'the fulfillment completed');
    expect(JSON.stringify(sandbox.fulfillmentsFor(tenant.reseller.shopDomain).map((pushed) => pushed.body))).toContain('REVIVED-TRK');
    const again = await target.api.post(retryPath, { token: tenant.user.token });
    expect(again.status).toBe(400);
    expect(again.body.error).toMatchObject({ code: 'sync_job_not_retryable' });
    await waitFor(async () => (await divergencesOf(tenant)).length === 0, 10_000, 'fulfillment_dead resolved');
    const [row] = await queryRows<{ status: string }>(target.databaseUrl, 'select status from divergences where id = $1', [entry.id]);
    expect(row!.status).toBe('resolved');
  });

  it('a dead fulfillment is listed in the transaction of its death, and can be dismissed', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    sandbox.setFaults(tenant.reseller.shopDomain, { alwaysFail: true, status: 500 });
    const [body] = sandbox.shipOrder(supplier.shopDomain, 'custom', placed.sourceOrderId, { trackingNumbers: ['DEAD-TRK'] });
    await deliverFulfillment(tenant, supplier, body!);
    const entry = await waitFor(async () => (await divergencesOf(tenant)).find((candidate) => candidate.type === 'fulfillment_dead'), 30_000, 'fulfillment_dead');
    const [fulfillment] = await fulfillmentsOf(tenant, placed.jobId);
    expect(entry).toMatchObject({ syncJobId: placed.jobId, subjectId: fulfillment!.id });
    const [death] = await queryRows<{ status: string }>(target.databaseUrl, 'select status from fulfillments where id = $1', [fulfillment!.id]);
    expect(death!.status).toBe('dead');
    sandbox.clearFaults(tenant.reseller.shopDomain);
    await tenant.target.api.post(`/v1/reseller_stores/${tenant.reseller.id}/divergences/${entry.id}/dismiss`, { token: tenant.user.token });
    expect(await divergencesOf(tenant)).toEqual([]);
  });

  it('a placed job with no tracking after STALE_AFTER_MS is stale once (sync_job.stale), and resolved when tracking arrives', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['platform_b']);
    const supplier = tenant.suppliers[0]!;
    const stale = await placeOrder(sandbox, tenant, supplier);
    const fresh = await placeOrder(sandbox, tenant, supplier);
    await queryRows(target.databaseUrl, "update sync_jobs set completed_at = now() - interval '8 days' where id = $1", [stale.jobId]);

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    const entries = await divergencesOf(tenant);
    expect(entries).toEqual([expect.objectContaining({ type: 'stale', syncJobId: stale.jobId })]);
    const events = await eventsOf(tenant, 'sync_job.stale');
    expect(events.map((event) => event.object.id)).toEqual([stale.jobId]);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(await eventsOf(tenant, 'sync_job.stale')).toHaveLength(1);
    expect(fresh.jobId).not.toBe(stale.jobId);

    const [body] = sandbox.shipOrder(supplier.shopDomain, 'platform_b', stale.sourceOrderId, { trackingNumbers: ['LATE-TRK'] });
    expect((await deliverFulfillment(tenant, supplier, body!)).status).toBe(200);
    expect(await divergencesOf(tenant)).toEqual([]);
  });

  it('a stale job its supplier then cancels: the stale entry is resolved, the cancellation listed', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    await queryRows(target.databaseUrl, "update sync_jobs set completed_at = now() - interval '8 days' where id = $1", [placed.jobId]);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    sandbox.cancelOrder(supplier.shopDomain, 'custom', placed.sourceOrderId);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    expect((await divergencesOf(tenant)).map((entry) => entry.type)).toEqual(['supplier_cancelled']);
  });

  it('a shipment whose tracking has text no database can store is skipped (its webhook would be refused), and the pass goes on', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const poisoned = await placeOrder(sandbox, tenant, supplier);
    const fine = await placeOrder(sandbox, tenant, supplier);
    sandbox.shipOrder(supplier.shopDomain, 'custom', poisoned.sourceOrderId, { trackingNumbers: ['TRK\u0000-1'] });
    sandbox.shipOrder(supplier.shopDomain, 'custom', fine.sourceOrderId, { trackingNumbers: ['TRK-2'] });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    expect(await fulfillmentsOf(tenant, fine.jobId)).toHaveLength(1);
    expect(await fulfillmentsOf(tenant, poisoned.jobId)).toEqual([]);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
  });

  it('tracking a pass finds for an order the service had cancelled at the supplier makes that cancellation too_late, as the webhook would', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    const cancel = { id: placed.externalOrderId, cancelledAt: new Date().toISOString() };
    await sendWebhook({ targetUrl: `${target.url}${ORDERS_PATH}`, shopDomain: tenant.reseller.shopDomain, secret: tenant.reseller.secret, topic: 'orders/cancelled', payload: cancel });
    const outcome = async () => (await queryRows<{ outcome: string | null }>(target.databaseUrl, 'select outcome from cancellations where sync_job_id = $1', [placed.jobId]))[0]?.outcome;
    await waitFor(async () => (await outcome()) === 'cancelled', 20_000, 'the supplier order cancelled');
    // The supplier ships anyway, and its fulfillments/create webhook is lost.
    sandbox.shipOrder(supplier.shopDomain, 'custom', placed.sourceOrderId, { trackingNumbers: ['SHIPPED-ANYWAY'] });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded' });
    expect(await fulfillmentsOf(tenant, placed.jobId)).toHaveLength(1);
    expect(await outcome()).toBe('too_late');
    expect(await eventsOf(tenant, 'cancellation.too_late')).toHaveLength(1);
    const [entry] = await divergencesOf(tenant);
    expect(entry).toMatchObject({ type: 'too_late', syncJobId: placed.jobId });
    // Dismissed, so the file's /metrics test still counts no open too_late entry.
    const dismissed = await target.api.post(`/v1/reseller_stores/${tenant.reseller.id}/divergences/${entry!.id}/dismiss`, { token: tenant.user.token });
    expect(dismissed.body).toMatchObject({ status: 'dismissed' });
  });

  it('a stale job whose order the storefront cancels, and the service then cancels at the supplier: the stale entry is resolved with it', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
    const placed = await placeOrder(sandbox, tenant, tenant.suppliers[0]!);
    await queryRows(target.databaseUrl, "update sync_jobs set completed_at = now() - interval '8 days' where id = $1", [placed.jobId]);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    expect((await divergencesOf(tenant)).map((entry) => entry.type)).toEqual(['stale']);
    const cancel = { id: placed.externalOrderId, cancelledAt: new Date().toISOString() };
    await sendWebhook({ targetUrl: `${target.url}${ORDERS_PATH}`, shopDomain: tenant.reseller.shopDomain, secret: tenant.reseller.secret, topic: 'orders/cancelled', payload: cancel });
    await waitFor(async () => {
      const [row] = await queryRows<{ outcome: string | null }>(target.databaseUrl, 'select outcome from cancellations where sync_job_id = $1', [placed.jobId]);
      return row?.outcome === 'cancelled';
    }, 20_000, 'the supplier order cancelled');
    expect(await divergencesOf(tenant)).toEqual([]);
  });

  it('a stale job whose lines the storefront cancels one by one: the last cancelled at the supplier resolves the entry, and it is not raised again', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
    const { order, jobId } = await placeAnvilsAndBells(sandbox, tenant, 'lines', 1);
    await queryRows(target.databaseUrl, "update sync_jobs set completed_at = now() - interval '8 days' where id = $1", [jobId]);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    expect((await divergencesOf(tenant)).map((entry) => entry.type)).toEqual(['stale']);
    const cancelled = (n: number) => waitFor(async () => {
      const rows = await queryRows<{ outcome: string | null }>(target.databaseUrl, 'select outcome from cancellations where sync_job_id = $1', [jobId]);
      return rows.length === n && rows.every((row) => row.outcome === 'cancelled');
    }, 20_000, `${n} cancellation(s) cancelled at the supplier`);
    const cancelLine = (sku: string, quantity: number) =>
      sendWebhook({ targetUrl: `${target.url}${ORDERS_PATH}`, shopDomain: tenant.reseller.shopDomain, secret: tenant.reseller.secret, topic: 'orders/cancelled',
        payload: { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku, quantity }] } });
    await cancelLine('WCH-A', 2);
    await cancelled(1);
    // The bells are still open: the entry stays.
    expect((await divergencesOf(tenant)).map((entry) => entry.type)).toEqual(['stale']);
    await cancelLine('WCH-B', 1);
    await cancelled(2);
    // Nothing of the supplier order is left to ship: the entry is resolved, and a later pass raises none.
    expect(await divergencesOf(tenant)).toEqual([]);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded' });
    expect(await divergencesOf(tenant)).toEqual([]);
  });

  it("a supplier cancelling some lines itself, its webhook lost, is recorded once with those lines; the lines the service had it cancel are not its own", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
    const { order, supplier, jobId, sourceOrderId } = await placeAnvilsAndBells(sandbox, tenant, 'own-lines', 3);
    // The storefront cancels one anvil: the service cancels it at the supplier, whose order then shows it cancelled.
    await sendWebhook({ targetUrl: `${target.url}${ORDERS_PATH}`, shopDomain: tenant.reseller.shopDomain, secret: tenant.reseller.secret, topic: 'orders/cancelled',
      payload: { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'WCH-A', quantity: 1 }] } });
    await waitFor(async () => (await queryRows<{ outcome: string | null }>(target.databaseUrl, 'select outcome from cancellations where sync_job_id = $1', [jobId]))[0]?.outcome === 'cancelled', 20_000, 'the anvil cancelled at the supplier');
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(await auditOf(tenant, 'sync_job.supplier_cancelled')).toEqual([]);

    // Out of stock, the supplier cancels two bells itself; its webhook is lost.
    const held = sandbox.orderOf(supplier.shopDomain, 'custom', sourceOrderId) as { lines: { sku: string; cancelledQuantity?: number }[] };
    const lines = held.lines.map((line) => (line.sku === 'WCH-B' ? { ...line, cancelledQuantity: 2 } : line));
    sandbox.seedOrder(supplier.shopDomain, 'custom', { ...held, lines, updatedAt: new Date().toISOString() });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    expect(await auditOf(tenant, 'sync_job.supplier_cancelled')).toEqual([
      { resource_id: jobId, metadata: expect.objectContaining({ source: 'watch', sourceOrderId, lines: [{ sku: 'WCH-B', quantity: 2 }] }) },
    ]);
    expect((await divergencesOf(tenant)).map((entry) => [entry.type, entry.syncJobId])).toEqual([['supplier_cancelled', jobId]]);
    const [job] = await queryRows<{ supplier_cancelled_at: Date | null; status: string }>(target.databaseUrl, 'select supplier_cancelled_at, status from sync_jobs where id = $1', [jobId]);
    expect(job).toMatchObject({ status: 'completed', supplier_cancelled_at: expect.any(Date) });
    // Listed again unchanged: nothing more.
    sandbox.seedOrder(supplier.shopDomain, 'custom', { ...held, lines, updatedAt: new Date().toISOString() });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(await auditOf(tenant, 'sync_job.supplier_cancelled')).toHaveLength(1);
  });

  it('the rest of a partly shipped order the service cancelled is not taken for the supplier\'s own cancellation', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
    const { order, supplier, jobId, sourceOrderId } = await placeAnvilsAndBells(sandbox, tenant, 'rest', 3);
    // The anvils shipped; the storefront cancels the order: the bells are cancelled, the outcome too_late.
    sandbox.fulfilLines(supplier.shopDomain, 'custom', sourceOrderId, [{ sku: 'WCH-A', quantity: 2 }]);
    await sendWebhook({ targetUrl: `${target.url}${ORDERS_PATH}`, shopDomain: tenant.reseller.shopDomain, secret: tenant.reseller.secret, topic: 'orders/cancelled',
      payload: { id: order.id, cancelledAt: new Date().toISOString() } });
    await waitFor(async () => (await queryRows<{ outcome: string | null }>(target.databaseUrl, 'select outcome from cancellations where sync_job_id = $1', [jobId]))[0]?.outcome === 'too_late', 20_000, 'the rest cancelled at the supplier');
    expect((sandbox.orderOf(supplier.shopDomain, 'custom', sourceOrderId) as { lines: { sku: string; cancelledQuantity?: number }[] }).lines.map((line) => line.cancelledQuantity ?? 0)).toEqual([0, 3]);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded' });
    expect(await auditOf(tenant, 'sync_job.supplier_cancelled')).toEqual([]);
    const [tooLate, ...others] = await divergencesOf(tenant);
    expect(others).toEqual([]);
    expect(tooLate).toMatchObject({ type: 'too_late', syncJobId: jobId });
    // Dismissed (the reseller arranges the return), so the file's metrics count no open too_late.
    expect((await tenant.target.api.post(`/v1/reseller_stores/${tenant.reseller.id}/divergences/${tooLate.id}/dismiss`, { token: tenant.user.token })).status).toBe(200);
  });

  it('no stale entry is raised beside a supplier cancellation being recorded at that moment: the pass waits for the job, then decides', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const placed = await placeOrder(sandbox, tenant, tenant.suppliers[0]!);
    await queryRows(target.databaseUrl, "update sync_jobs set completed_at = now() - interval '8 days' where id = $1", [placed.jobId]);
    // A supplier cancellation's transaction, as CancellationService.recordSupplierCancellation makes it: the job's lock, then the mark, not committed yet.
    const recording = new pg.Client({ connectionString: target.databaseUrl });
    await recording.connect();
    try {
      await recording.query('begin');
      await recording.query('select pg_advisory_xact_lock(hashtext($1))', [`fulfillment:${placed.jobId}`]);
      await recording.query('update sync_jobs set supplier_cancelled_at = now() where id = $1', [placed.jobId]);
      const passId = await requestCheck(tenant);
      const waiting = "select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'advisory'";
      await waitFor(async () => (await queryRows(target.databaseUrl, waiting)).length > 0, 15_000, "the pass to wait for the job's lock");
      await recording.query('commit');
      expect(await finishedPass(tenant, passId)).toMatchObject({ status: 'succeeded', repairs: 0 });
    } finally {
      await recording.end();
    }
    expect(await divergencesOf(tenant)).toEqual([]);
  });

  it("lists newest first, pages, and answers 404 for another user's store", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const orders = [await placeOrder(sandbox, tenant, supplier), await placeOrder(sandbox, tenant, supplier), await placeOrder(sandbox, tenant, supplier)];
    for (const placed of orders) sandbox.cancelOrder(supplier.shopDomain, 'custom', placed.sourceOrderId);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 3 });
    const all = await divergencesOf(tenant);
    expect(all).toHaveLength(3);
    expect(all.map((entry) => entry.id)).toEqual([...all.map((entry) => entry.id)].sort().reverse());
    const page = await tenant.target.api.get(`/v1/reseller_stores/${tenant.reseller.id}/divergences?limit=2`, { token: tenant.user.token });
    expect(page.body).toMatchObject({ object: 'list', has_more: true });
    expect(page.body.data.map((entry: any) => entry.id)).toEqual(all.slice(0, 2).map((entry) => entry.id));
    const next = await divergencesOf(tenant, `?limit=2&starting_after=${all[1].id}`);
    expect(next.map((entry) => entry.id)).toEqual([all[2].id]);

    const stranger = await registerUser(target.api);
    const base = `/v1/reseller_stores/${tenant.reseller.id}`;
    expectError(await target.api.get(`${base}/divergences`, { token: stranger.token }), 404, 'not_found');
    expectError(await target.api.post(`${base}/divergences/${all[0].id}/dismiss`, { token: stranger.token }), 404, 'not_found');
    expectError(await target.api.post(`${base}/divergence_checks`, { token: stranger.token }), 404, 'not_found');
    expectError(await target.api.post(`${base}/divergences/div_unknown/dismiss`, { token: tenant.user.token }), 404, 'not_found');
  });
});

describe('passes', () => {
  it('reads a busy supplier whose page of updated orders is over 1 MiB (as reconciliation reads its lists): a lost shipment is pushed', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['platform_a']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    // The supplier's own busy day: 240 orders of 30 lines (about 6 KB of JSON each), all changed since
    // the last pass: one page of the platform's 250 is about 1.5 MB.
    for (let n = 0; n < 240; n++) {
      const lines = Array.from({ length: 30 }, (_, i) => ({ sku: `OWN-${n}-${i}`, title: `A perfectly ordinary product title number ${i}`, vendor: 'Own brand', quantity: 1, price: '9.00' }));
      sandbox.seedOrder(supplier.shopDomain, 'platform_a', sandbox.buildOrderPayload('platform_a', { id: 5_000_000 + n, lines, email: 'someone@example.com' }));
    }
    sandbox.shipOrder(supplier.shopDomain, 'platform_a', placed.sourceOrderId, { trackingNumbers: ['BIG-PAGE-1'] });
    const pass = await check(tenant);
    expect(pass).toMatchObject({ status: 'succeeded', error: null });
    expect(await fulfillmentsOf(tenant, placed.jobId)).toHaveLength(1);
  });

  it('one pass per store at a time: a second request while one runs is 409', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    sandbox.setFaults(tenant.suppliers[0]!.shopDomain, { latencyMs: 1_500 });
    const id = await requestCheck(tenant);
    const again = await target.api.post(`/v1/reseller_stores/${tenant.reseller.id}/divergence_checks`, { token: tenant.user.token });
    expectError(again, 409, 'conflict');
    expect(again.body.error.details).toEqual({ reason: 'divergence_check_in_progress' });
    expect((await finishedPass(tenant, id)).status).toBe('succeeded');
    sandbox.clearFaults(tenant.suppliers[0]!.shopDomain);
  });

  it('each platform is listed through its own paging, and the watermark moves to the newest update seen', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_b', ['platform_a', 'platform_b', 'custom']);
    const placed = [];
    for (const supplier of tenant.suppliers) for (let i = 0; i < 3; i++) placed.push(await placeOrder(sandbox, tenant, supplier));
    for (const store of [tenant.reseller, ...tenant.suppliers]) sandbox.setListPageSize(store.shopDomain, 2);
    for (const [index, order] of placed.entries()) sandbox.shipOrder(order.supplier.shopDomain, order.supplier.platform, order.sourceOrderId, { trackingNumbers: [`PG-${index}`] });

    const pass = await check(tenant);
    expect(pass).toMatchObject({ status: 'succeeded', repairs: 9, error: null });
    for (const order of placed) expect(await fulfillmentsOf(tenant, order.jobId)).toHaveLength(1);
    for (const supplier of tenant.suppliers) {
      const lists = sandbox.requestsFor(supplier.shopDomain).filter((request) => request.method === 'GET' && !/shipment-trackings/.test(request.path));
      expect(lists.length, supplier.platform).toBeGreaterThanOrEqual(2);
      const watermark = await watermarkOf(target, supplier.id);
      expect(watermark).not.toBeNull();
    }
    // platform_b: a completed order's tracking is read from its shipment trackings.
    const b = tenant.suppliers.find((supplier) => supplier.platform === 'platform_b')!;
    expect(sandbox.requestsFor(b.shopDomain).filter((request) => /shipment-trackings/.test(request.path) && request.method === 'GET')).toHaveLength(3);
  });

  it("a platform_b store whose orders changed within the second it was added still gets a watermark (its times have whole seconds)", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['platform_b']);
    const supplier = tenant.suppliers[0]!;
    const [store] = await queryRows<{ created_at: Date }>(target.databaseUrl, 'select created_at from source_stores where id = $1', [supplier.id]);
    const addedSecond = new Date(Math.floor(store!.created_at.getTime() / 1000) * 1000);
    const order = sandbox.buildOrderPayload('platform_b', { id: 992_001, lines: [{ sku: 'S-1', title: 'S', vendor: 'elsewhere', quantity: 1, price: '5.00' }] });
    sandbox.seedOrder(supplier.shopDomain, 'platform_b', { ...order, date_modified_gmt: addedSecond.toISOString().slice(0, 19) });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', orders_seen: 1 });
    expect(await watermarkOf(target, supplier.id)).toEqual(addedSecond);
  });

  it('a list that fails mid-pass leaves its watermark; the next pass repairs what it missed', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom', 'platform_a']);
    const [failing, healthy] = tenant.suppliers as [typeof tenant.suppliers[0], typeof tenant.suppliers[0]];
    const orders = [await placeOrder(sandbox, tenant, failing), await placeOrder(sandbox, tenant, failing), await placeOrder(sandbox, tenant, failing)];
    const other = await placeOrder(sandbox, tenant, healthy);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded' });
    const before = await watermarkOf(target, failing.id);
    for (const order of orders) sandbox.shipOrder(failing.shopDomain, 'custom', order.sourceOrderId, { trackingNumbers: [`MID-${order.jobId}`] });
    sandbox.shipOrder(healthy.shopDomain, 'platform_a', other.sourceOrderId, { trackingNumbers: ['HEALTHY-1'] });
    sandbox.setListPageSize(failing.shopDomain, 1);
    // The first page is answered, then the list fails.
    sandbox.setFaults(failing.shopDomain, { faultsAfter: 1, failNext: 20, status: 502 });

    const pass = await check(tenant);
    expect(pass.status).toBe('failed');
    expect(pass.error).toContain(failing.id);
    expect(pass.error).toContain('502');
    expect(await watermarkOf(target, failing.id)).toEqual(before);
    expect(await fulfillmentsOf(tenant, other.jobId)).toHaveLength(1);

    sandbox.clearFaults(failing.shopDomain);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    for (const order of orders) expect(await fulfillmentsOf(tenant, order.jobId)).toHaveLength(1);
    expect((await watermarkOf(target, failing.id))!.getTime()).toBeGreaterThan(before!.getTime());
  });

  it('a rate-limited supplier pauses the pass for its Retry-After and nothing is lost', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['platform_b']);
    const supplier = tenant.suppliers[0]!;
    const orders = [await placeOrder(sandbox, tenant, supplier), await placeOrder(sandbox, tenant, supplier)];
    for (const order of orders) sandbox.shipOrder(supplier.shopDomain, 'platform_b', order.sourceOrderId, { trackingNumbers: [`RL-${order.jobId}`] });
    sandbox.setFaults(supplier.shopDomain, { rateLimitNext: 6, retryAfterSeconds: 1 });

    const pass = await check(tenant);
    expect(pass).toMatchObject({ status: 'succeeded', repairs: 2, error: null });
    for (const order of orders) expect(await fulfillmentsOf(tenant, order.jobId)).toHaveLength(1);
    expect(sandbox.requestsFor(supplier.shopDomain).filter((request) => request.status === 429)).toHaveLength(6);
  });
});

it('exposes passes by outcome, repairs by type, open divergences by type and the oldest open age in /metrics', async ({ service }) => {
  // After the tests above: this process ran every pass of the file.
  const metrics = await (await fetch(`${service.url}/metrics`)).text();
  expect(metrics).toMatch(/^divergence_watch_passes_total\{outcome="succeeded"\} [1-9]\d*$/m);
  expect(metrics).toMatch(/^divergence_watch_passes_total\{outcome="failed"\} [1-9]\d*$/m);
  for (const type of ['tracking', 'supplier_cancelled', 'storefront_cancelled', 'stale']) {
    expect(metrics).toMatch(new RegExp(`^divergence_watch_repairs_total\\{type="${type}"\\} [1-9]\\d*$`, 'm'));
  }
  expect(metrics).toMatch(/^divergence_watch_pauses_total [1-9]\d*$/m);
  expect(metrics).toMatch(/^divergences_open\{type="supplier_cancelled"\} [1-9]\d*$/m);
  expect(metrics).toMatch(/^divergences_open\{type="too_late"\} 0$/m);
  expect(metrics).toMatch(/^divergence_oldest_open_age_seconds \d+(\.\d+)?(e[-+]\d+)?$/m);
});

/** A custom storefront's order of two anvils (WCH-A) and `bells` bells (WCH-B) from its one custom supplier, placed there: the order, the supplier and the job. */
async function placeAnvilsAndBells(sandbox: Sandbox, tenant: Tenant, name: string, bells: number) {
  const supplier = tenant.suppliers[0]!;
  const order = sandbox.buildOrderPayload('custom', {
    id: `wo-${name}-${Date.now()}`,
    lines: [
      { sku: 'WCH-A', title: 'Anvil', vendor: supplier.vendorTag, quantity: 2, price: '30.00' },
      { sku: 'WCH-B', title: 'Bell', vendor: supplier.vendorTag, quantity: bells, price: '12.00' },
    ],
  });
  expect(await sandbox.placeCustomerOrder(tenant.reseller.shopDomain, 'custom', order)).toMatchObject({ delivered: { status: 200 } });
  return { order, supplier, ...(await placedJobOf(tenant, String(order.id))) };
}
