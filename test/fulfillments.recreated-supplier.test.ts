/**
 * A supplier record deleted and re-created with the same shop domain (operations.md anticipates
 * suppliers "deleted or re-created with the same vendor tag"): the reseller fixes a token or a
 * setting by making a new record, and points the supplier's webhooks at it. The orders placed
 * through the deleted record are still the supplier's to ship: their tracking (and the supplier's
 * own cancellation) now arrive signed by the new record, and must reach those orders' jobs, or the
 * customer never hears of the shipment. Only the deleted records of the same reseller store and
 * owner, on the same platform and shop domain, answer for an active one: never another tenant's.
 * Real service, queue, database, sandbox and webhooks.
 */
import { describe, expect } from 'vitest';
import { sendWebhook, type JsonObject } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { ANVIL, createShop, placeWithAnswerLost as placeForShopWithAnswerLost, sendStorefrontWebhook, settled } from './support/cancellations.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { getJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { auditOf, check, divergencesOf, fulfillmentsOf, openTenant, orderWithAnswersLost, placeOrder, pushedTracking, recreateSupplier, resellerPlatformFor, type Supplier, type Target, type Tenant } from './support/watch.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';

test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });

const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

/** A delivery of the supplier's platform, signed with `supplier`'s secret: to its own URL (`perStore`) or the shared one. */
function supplierSends(tenant: Tenant, supplier: Supplier, topic: string, payload: unknown, options: { perStore?: boolean; webhookId?: string } = {}) {
  return sendWebhook({
    targetUrl: `${tenant.target.url}${FULFILLMENTS_PATH}${options.perStore ? `/${supplier.id}` : ''}`,
    shopDomain: supplier.shopDomain,
    secret: supplier.secret,
    topic,
    payload,
    ...(options.webhookId && { webhookId: options.webhookId }),
  });
}

describe.each(['custom', 'platform_a'] as const)('a %s supplier deleted and re-created with the same shop domain', (platform) => {
  it("ships an order placed through the deleted record: its tracking, posted to the new record's URL, reaches the customer once", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
    const placed = await placeOrder(sandbox, tenant, tenant.suppliers[0]!);
    const again = await recreateSupplier(tenant, tenant.suppliers[0]!);

    const [body] = sandbox.shipOrder(again.shopDomain, platform, placed.sourceOrderId, { trackingNumbers: ['1Z-AGAIN-1'], company: 'UPS' });
    const delivered = await supplierSends(tenant, again, 'fulfillments/create', body, { perStore: true });
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
    expect((delivered.body as { syncJobIds: string[] }).syncJobIds).toEqual([placed.jobId]);

    const [pushed] = await pushedTracking(sandbox, tenant, 1);
    expect(JSON.stringify(pushed!.body)).toContain('1Z-AGAIN-1');
    await waitFor(async () => (await fulfillmentsOf(tenant, placed.jobId))[0]?.status === 'completed', 20_000, 'tracking pushed');

    // Redelivered (same webhook id), and delivered again to the shared URL: recognised, nothing more is pushed.
    const again1 = await supplierSends(tenant, again, 'fulfillments/create', body, { perStore: true, webhookId: delivered.webhookId });
    const again2 = await supplierSends(tenant, again, 'fulfillments/create', body);
    for (const response of [again1, again2]) {
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect((response.body as { syncJobIds: string[] }).syncJobIds).toEqual([placed.jobId]);
    }
    expect(await fulfillmentsOf(tenant, placed.jobId)).toHaveLength(1);
    expect(sandbox.fulfillmentsFor(tenant.reseller.shopDomain)).toHaveLength(1);
  });

  it('the supplier cancels an order placed through the deleted record: recorded on its job, on the to-do list', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
    const placed = await placeOrder(sandbox, tenant, tenant.suppliers[0]!);
    const again = await recreateSupplier(tenant, tenant.suppliers[0]!);

    const cancel: { topic: string; payload: JsonObject } =
      platform === 'custom'
        ? { topic: 'orders/cancelled', payload: { id: placed.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'out of stock' } }
        : { topic: 'orders/cancelled', payload: { ...sandbox.orderOf(again.shopDomain, platform, placed.sourceOrderId)!, cancelled_at: new Date().toISOString(), cancel_reason: 'inventory' } };
    const delivered = await supplierSends(tenant, again, cancel.topic, cancel.payload, { perStore: true });
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
    expect((delivered.body as { syncJobIds: string[] }).syncJobIds).toEqual([placed.jobId]);
    expect((await getJob(target.api, tenant.user.token, placed.jobId)).supplierCancelledAt).not.toBeNull();
    expect((await divergencesOf(tenant)).map((entry) => ({ type: entry.type, syncJobId: entry.syncJobId }))).toEqual([{ type: 'supplier_cancelled', syncJobId: placed.jobId }]);
  });

  it("a pass lists the order shipped on the re-created record's store with no webhook: the tracking is pushed to the deleted record's job", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
    const placed = await placeOrder(sandbox, tenant, tenant.suppliers[0]!);
    const again = await recreateSupplier(tenant, tenant.suppliers[0]!);
    // Shipped after the new record was made (a new record's history is not read), its webhook lost.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    sandbox.shipOrder(again.shopDomain, platform, placed.sourceOrderId, { trackingNumbers: ['1Z-WATCHED'] });

    const pass = await check(tenant);
    expect(pass).toMatchObject({ status: 'succeeded', repairs: 1, error: null });
    const [pushed] = await pushedTracking(sandbox, tenant, 1);
    expect(JSON.stringify(pushed!.body)).toContain('1Z-WATCHED');
    expect((await auditOf(tenant, 'fulfillment.reconciled')).map((entry) => entry.metadata.syncJobId)).toEqual([placed.jobId]);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(await fulfillmentsOf(tenant, placed.jobId)).toHaveLength(1);
  });
});

describe("another tenant's record of the same supplier", () => {
  it("never answers for a deleted record that is not its own: another user's, or another reseller store's of the same user", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const placed = await placeOrder(sandbox, tenant, supplier);
    const deleted = await target.api.delete(`/v1/reseller_stores/${tenant.reseller.id}/source_stores/${supplier.id}`, { token: tenant.user.token });
    expect(deleted.status).toBe(204);

    // Another user, and another storefront of the same user, each with an active record of the supplier's domain.
    const stranger = await registerUser(target.api);
    const strangerStore = await createResellerStore(target.api, stranger.token);
    const ownOther = await createResellerStore(target.api, tenant.user.token);
    const others: Supplier[] = [];
    for (const [token, storeId] of [[stranger.token, strangerStore.id], [tenant.user.token, ownOther.id]] as const) {
      const secret = `whsec_other_${uniqueSuffix()}`;
      const record = await createSourceStore(target.api, token, storeId, { platform: 'custom', shopDomain: supplier.shopDomain, vendorTag: supplier.vendorTag, webhookSecret: secret });
      others.push({ id: record.id, shopDomain: record.shopDomain, platform: 'custom', secret, vendorTag: supplier.vendorTag });
    }

    const [body] = sandbox.shipOrder(supplier.shopDomain, 'custom', placed.sourceOrderId, { trackingNumbers: ['1Z-NOT-YOURS'] });
    for (const other of others) {
      for (const perStore of [true, false]) {
        const response = await supplierSends(tenant, other, 'fulfillments/create', body, { perStore });
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        expect((response.body as { syncJobIds: string[] }).syncJobIds).toEqual([]);
      }
      const cancelled = await supplierSends(tenant, other, 'orders/cancelled', { id: placed.sourceOrderId, cancelledAt: new Date().toISOString() }, { perStore: true });
      expect((cancelled.body as { syncJobIds?: string[] }).syncJobIds ?? []).toEqual([]);
    }
    expect(await fulfillmentsOf(tenant, placed.jobId)).toEqual([]);
    expect((await getJob(target.api, tenant.user.token, placed.jobId)).supplierCancelledAt).toBeNull();
    expect(sandbox.fulfillmentsFor(tenant.reseller.shopDomain)).toEqual([]);
  });
});

let nextDoubtNumber = 960_000 + Math.floor(Math.random() * 9_000) * 10;

describe.each(['custom', 'platform_a'] as const)("a %s supplier's deleted record whose job's create answer was lost", (platform) => {
  it("a pass lists the order (its reference names the deleted record's job) cancelled by the supplier: recorded on that job, on the to-do list", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
    const lost = await orderWithAnswersLost(sandbox, tenant, tenant.suppliers[0]!);
    const again = await recreateSupplier(tenant, tenant.suppliers[0]!);
    // Cancelled after the new record was made (a new record's history is not read), its webhook lost.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    sandbox.cancelOrder(again.shopDomain, platform, lost.sourceOrderId);

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    expect((await getJob(target.api, tenant.user.token, lost.jobId)).supplierCancelledAt).not.toBeNull();
    expect((await divergencesOf(tenant)).map((entry) => ({ type: entry.type, syncJobId: entry.syncJobId }))).toContainEqual({ type: 'supplier_cancelled', syncJobId: lost.jobId });
    expect((await auditOf(tenant, 'sync_job.supplier_cancelled')).map((entry) => entry.resource_id)).toEqual([lost.jobId]);
  });

  it("a pass lists the order shipped: the shipment is held for the deleted record's job, not for the new record", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
    const former = tenant.suppliers[0]!;
    const lost = await orderWithAnswersLost(sandbox, tenant, former);
    const again = await recreateSupplier(tenant, former);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    sandbox.shipOrder(again.shopDomain, platform, lost.sourceOrderId, { trackingNumbers: ['1Z-IN-DOUBT'] });

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    const held = await queryRows<{ source_store_id: string; source_order_id: string }>(
      target.databaseUrl,
      'select source_store_id, source_order_id from held_fulfillments where reseller_store_id = $1',
      [tenant.reseller.id],
    );
    expect(held).toEqual([{ source_store_id: former.id, source_order_id: lost.sourceOrderId }]);
  });
});

describe("a storefront order cancelled while its job of a deleted record was in doubt", () => {
  it("is cancelled at the supplier through the new record: the lookup by reference finds the order the lost answer left", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const former = tenant.suppliers[0]!;
    const lost = await orderWithAnswersLost(sandbox, tenant, former);
    const again = await recreateSupplier(tenant, former);
    // The customer cancels. The job's record is deleted, but the record that replaced it answers for it.
    const cancelled = await sendWebhook({
      targetUrl: `${target.url}${ORDERS_PATH}`,
      shopDomain: tenant.reseller.shopDomain,
      secret: tenant.reseller.secret,
      topic: 'orders/cancelled',
      payload: { ...lost.order, cancelled_at: new Date().toISOString() },
    });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    await waitFor(async () => {
      const job = await getJob(target.api, tenant.user.token, lost.jobId);
      return ['completed', 'dead'].includes(job.cancellations[0]?.status);
    }, 30_000, 'the cancellation settled');
    const job = await getJob(target.api, tenant.user.token, lost.jobId);
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled' }]);
    expect(sandbox.orderOf(again.shopDomain, 'custom', lost.sourceOrderId)?.status).toBe('cancelled');
  });
});

/**
 * A new shop's order of Acme's whose create answers were all lost, then cancelled by the customer;
 * the cancellation's lookup by reference misses the order (listed as created a day before the job),
 * so the job ends `not_placed` with no supplier order id, though the supplier order exists.
 */
async function jobEndedNotPlaced(sandbox: Parameters<typeof openTenant>[0], target: Target, idPrefix: string) {
  const shop = await createShop(target.api, 'custom', 'custom');
  const order = sandbox.buildOrderPayload('custom', { id: `${idPrefix}-${nextDoubtNumber++}`, lines: [{ ...ANVIL, quantity: 1 }] });
  const { jobId, held: placed } = await placeForShopWithAnswerLost(target.api, sandbox, target.url, shop, order);
  const sourceOrderId = String(placed.id);
  const stored = sandbox.orderOf(shop.acme.shopDomain, 'custom', sourceOrderId)!;
  sandbox.seedOrder(shop.acme.shopDomain, 'custom', { ...stored, createdAt: new Date(Date.now() - 24 * 60 * 60_000).toISOString() });
  await sendStorefrontWebhook(target.url, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
  expect(await waitForJob(target.api, shop.user.token, jobId, settled)).toMatchObject({ status: 'completed', sourceOrderId: null, cancellations: [{ outcome: 'not_placed' }] });
  return { shop, jobId, sourceOrderId };
}

describe("a job of a deleted record ended not_placed (its cancellation's lookup missed the order) whose order the supplier ships", () => {
  it("the shipment, posted to the new record's URL, is that job's: order recorded, tracking pushed, too_late on the to-do list", async ({ sandbox, target }) => {
    const { shop, jobId, sourceOrderId } = await jobEndedNotPlaced(sandbox, target, 'rn');

    // The reseller deletes the supplier record and creates it again; the supplier ships the order all the same.
    const [acme] = await queryRows<{ vendor_tag: string }>(target.databaseUrl, 'select vendor_tag from source_stores where id = $1', [shop.acme.id]);
    const tenant = { target, user: shop.user, reseller: { ...shop.reseller }, suppliers: [] } as unknown as Tenant;
    const again = await recreateSupplier(tenant, { ...shop.acme, vendorTag: acme!.vendor_tag });
    const [body] = sandbox.shipOrder(again.shopDomain, 'custom', sourceOrderId, { trackingNumbers: ['1Z-UNPLACED'] });
    const delivered = await supplierSends(tenant, again, 'fulfillments/create', body, { perStore: true });
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
    expect((delivered.body as { syncJobIds: string[] }).syncJobIds).toEqual([jobId]);

    const job = await waitForJob(target.api, shop.user.token, jobId, (j) => j.fulfillments?.[0]?.status === 'completed', 15_000, 'tracking pushed for');
    expect(job).toMatchObject({ sourceOrderId, cancellations: [{ status: 'completed', outcome: 'too_late' }] });
    expect(job.fulfillments).toMatchObject([{ trackingNumbers: ['1Z-UNPLACED'] }]);
    expect(sandbox.fulfillmentsFor(shop.reseller.shopDomain)).toHaveLength(1);
  });
});

describe('a shipment held for a job of a record since deleted, its job ended not_placed', () => {
  it('is read through the record that replaced it before it is forgotten: the job it names takes it', async ({ sandbox, target }) => {
    const { shop, jobId, sourceOrderId } = await jobEndedNotPlaced(sandbox, target, 'rh');

    // A shipment held while the job was in doubt; the supplier cannot answer for now, so the sweep keeps it.
    sandbox.shipOrder(shop.acme.shopDomain, 'custom', sourceOrderId, { trackingNumbers: ['1Z-KEPT'] });
    sandbox.setFaults(shop.acme.shopDomain, { alwaysFail: true, status: 500 });
    await queryRows(
      target.databaseUrl,
      `insert into held_fulfillments (id, owner_id, reseller_store_id, source_store_id, source_order_id, dedupe_key, webhook_id, tracking, received_at)
       select $1, owner_id, id, $3, $4, 'kept-key', null, $5::jsonb, now() from reseller_stores where id = $2`,
      [`hf_kept_${nextDoubtNumber++}`, shop.reseller.id, shop.acme.id, sourceOrderId, JSON.stringify({ numbers: ['1Z-KEPT'], urls: [], company: null })],
    );
    const reads = () => sandbox.requestsFor(shop.acme.shopDomain).filter((request) => request.method === 'GET' && request.path.includes(sourceOrderId)).length;
    await waitFor(async () => reads() >= 1, 5_000, 'a sweep reading the order');

    // The reseller deletes the record and creates it again; the supplier answers again.
    const [acme] = await queryRows<{ vendor_tag: string }>(target.databaseUrl, 'select vendor_tag from source_stores where id = $1', [shop.acme.id]);
    const tenant = { target, user: shop.user, reseller: { ...shop.reseller }, suppliers: [] } as unknown as Tenant;
    await recreateSupplier(tenant, { ...shop.acme, vendorTag: acme!.vendor_tag });
    sandbox.clearFaults(shop.acme.shopDomain);

    const job = await waitForJob(target.api, shop.user.token, jobId, (j) => j.fulfillments?.[0]?.status === 'completed', 15_000, 'held tracking pushed for');
    expect(job).toMatchObject({ sourceOrderId, cancellations: [{ status: 'completed', outcome: 'too_late' }] });
    expect(job.fulfillments).toMatchObject([{ trackingNumbers: ['1Z-KEPT'] }]);
    expect(await queryRows(target.databaseUrl, 'select id from held_fulfillments where reseller_store_id = $1', [shop.reseller.id])).toEqual([]);
  });
});

describe("another tenant's record of the same supplier, for a deleted record's job whose create answer was lost", () => {
  it("its pass lists the order whose reference names that job: nothing is recorded on it, nothing held", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const lost = await orderWithAnswersLost(sandbox, tenant, supplier);
    expect((await target.api.delete(`/v1/reseller_stores/${tenant.reseller.id}/source_stores/${supplier.id}`, { token: tenant.user.token })).status).toBe(204);
    // Another user with an active record of the supplier's shop.
    const stranger = await openTenant(sandbox, target, 'platform_a', []);
    const record = await createSourceStore(target.api, stranger.user.token, stranger.reseller.id, { platform: 'custom', shopDomain: supplier.shopDomain, vendorTag: supplier.vendorTag, webhookSecret: `whsec_x_${uniqueSuffix()}` });
    stranger.suppliers.push({ id: record.id, shopDomain: record.shopDomain, platform: 'custom', secret: '', vendorTag: supplier.vendorTag });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    sandbox.cancelOrder(supplier.shopDomain, 'custom', lost.sourceOrderId);
    sandbox.shipOrder(supplier.shopDomain, 'custom', lost.sourceOrderId, { trackingNumbers: ['1Z-STRANGER'] });

    expect(await check(stranger)).toMatchObject({ status: 'succeeded', error: null });
    expect((await getJob(target.api, tenant.user.token, lost.jobId)).supplierCancelledAt).toBeNull();
    expect(await queryRows(target.databaseUrl, 'select id from held_fulfillments where source_order_id = $1', [lost.sourceOrderId])).toEqual([]);
    expect(await divergencesOf(stranger)).toEqual([]);
  });
});
