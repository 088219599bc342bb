/**
 * An order is routed once (operations.md; issue 13, item 4): redeliveries of an order webhook after
 * its supplier was deleted, re-created with the same vendor tag, or had its token rotated return
 * the jobs the first delivery made and create none, so a supplier never receives a second order.
 * Rotating a credential is a PATCH, which keeps the store (and its jobs).
 */
import { describe, expect } from 'vitest';
import { buildFulfillmentPayload, sendWebhook } from './sandbox/server.ts';
import { expectError } from './support/assertions.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { recordSecret } from './support/leaks.ts';
import { auditOf, settled } from './support/sync-jobs.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';

let nextOrderId = 960_000 + Math.floor(Math.random() * 10_000) * 10;

const it = test
  /** A platform_a order with one line per vendor. */
  .extend('orderFor', { scope: 'file' }, ({ sandbox }) => (...vendors: string[]) =>
    sandbox.buildOrderPayload('platform_a', {
      id: nextOrderId++,
      lines: vendors.map((vendor, i) => ({ sku: `SKU-${i}`, title: `Item ${i}`, vendor, quantity: 1, price: '25.00' })),
    }))
  /** A user, a reseller store, a custom supplier tagged Acme on a sandbox store of its own, and an order to deliver. */
  .extend('shop', { scope: 'file' }, ({ service, api, sandbox, orderFor }) => async () => {
    const user: TestUser = await registerUser(api);
    const resellerSecret = `whsec_reseller_${uniqueSuffix()}`;
    const reseller = await createResellerStore(api, user.token, { platform: 'platform_a', webhookSecret: resellerSecret });
    const supplierDomain = `supplier-${uniqueSuffix()}.example.com`;
    const supplierToken = `sup_${uniqueSuffix()}${uniqueSuffix()}`;
    sandbox.registerStore(supplierDomain, { accessToken: supplierToken });
    const supplierSecret = `whsec_supplier_${uniqueSuffix()}`;
    const supplier = await createSourceStore(api, user.token, reseller.id, {
      platform: 'custom',
      shopDomain: supplierDomain,
      accessToken: supplierToken,
      webhookSecret: supplierSecret,
      vendorTag: 'Acme',
    });
    const payload = orderFor('Acme');
    /** Delivers an orders/create webhook (this shop's order unless told) and expects 200. */
    const deliverOrder = async (order: Record<string, unknown>, webhookId?: string) => {
      const response = await sendWebhook({
        targetUrl: `${service.url}${ORDERS_PATH}`,
        shopDomain: reseller.shopDomain,
        secret: resellerSecret,
        topic: 'orders/create',
        payload: order,
        ...(webhookId && { webhookId }),
      });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      return response;
    };
    const deliver = (webhookId?: string) => deliverOrder(payload, webhookId);
    return { user, reseller, supplier, supplierDomain, supplierSecret, payload, deliver, deliverOrder };
  })
  .extend('jobsOfOrder', { scope: 'file' }, ({ service }) => (resellerStoreId: string, externalOrderId: string) =>
    queryRows<{ id: string; source_store_id: string }>(
      service.databaseUrl,
      'select id, source_store_id from sync_jobs where reseller_store_id = $1 and external_order_id = $2 order by id',
      [resellerStoreId, externalOrderId],
    ));

describe('a redelivered order', () => {
  it('after its supplier was deleted and re-created with the same vendor tag: the same job, no second order', async ({ api, sandbox, shop, jobsOfOrder }) => {
    const { user, reseller, supplier, supplierDomain, payload, deliver } = await shop();
    const first = await deliver();
    const [jobId] = (first.body as { syncJobIds: string[] }).syncJobIds;
    expect(await settled(api, user.token, jobId!)).toMatchObject({ status: 'completed', attempts: 1 });

    const deleted = await api.delete(`/v1/reseller_stores/${reseller.id}/source_stores/${supplier.id}`, { token: user.token });
    expect(deleted.status).toBe(204);
    // Redelivered while the supplier is gone: its job is returned, nothing is created.
    expect((await deliver(first.webhookId)).body).toMatchObject({ syncJobIds: [jobId] });

    // The supplier comes back as a new record with the same vendor tag (and domain).
    const again = await createSourceStore(api, user.token, reseller.id, { platform: 'custom', shopDomain: supplierDomain, vendorTag: 'Acme', accessToken: `sup_${uniqueSuffix()}` });
    expect(again.id).not.toBe(supplier.id);
    expect((await deliver()).body).toMatchObject({ syncJobIds: [jobId] });

    expect(await jobsOfOrder(reseller.id, String(payload.id))).toEqual([{ id: jobId, source_store_id: supplier.id }]);
    expect(sandbox.ordersFor(supplierDomain)).toHaveLength(1);
    // An explicit POST /v1/sync_jobs is still the way to place it with the new record.
    const manual = await api.post('/v1/sync_jobs', { token: user.token, body: { source_store_id: again.id, external_order_id: String(payload.id) } });
    expect(manual.status).toBe(201);
  });

  it('after a supplier was added: the jobs of the first routing, none for the new supplier', async ({ api, sandbox, shop, orderFor, jobsOfOrder }) => {
    const { user, reseller, deliverOrder } = await shop();
    const order = orderFor('Acme', 'Other');
    const first = await deliverOrder(order);
    const syncJobIds = (first.body as { syncJobIds: string[] }).syncJobIds;
    expect(syncJobIds).toHaveLength(1);
    const later = await createSourceStore(api, user.token, reseller.id, { platform: 'custom', vendorTag: 'Other' });
    expect((await deliverOrder(order, first.webhookId)).body).toMatchObject({ syncJobIds });
    expect(await jobsOfOrder(reseller.id, String(order.id))).toHaveLength(1);
    expect(sandbox.ordersFor(later.shopDomain)).toHaveLength(0);
  });
});

describe('rotating a supplier credential with PATCH', () => {
  it('replaces the access token: later orders use it, a redelivery routes nothing again, and it is never shown', async ({ api, sandbox, shop, orderFor, jobsOfOrder }) => {
    const { user, reseller, supplier, supplierDomain, payload, deliver, deliverOrder } = await shop();
    const first = await deliver();
    const [jobId] = (first.body as { syncJobIds: string[] }).syncJobIds;
    expect(await settled(api, user.token, jobId!)).toMatchObject({ status: 'completed' });

    const rotatedToken = `sup_rotated_${uniqueSuffix()}${uniqueSuffix()}`;
    recordSecret('rotated access token', rotatedToken);
    sandbox.registerStore(supplierDomain, { accessToken: rotatedToken });
    const patched = await api.patch(`/v1/reseller_stores/${reseller.id}/source_stores/${supplier.id}`, { token: user.token, body: { accessToken: rotatedToken } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.id).toBe(supplier.id);
    expect(JSON.stringify(patched.body)).not.toContain(rotatedToken);
    expect(Object.keys(patched.body)).not.toContain('accessToken');

    expect((await deliver(first.webhookId)).body).toMatchObject({ syncJobIds: [jobId] });
    expect(sandbox.ordersFor(supplierDomain)).toHaveLength(1);
    // The next order is placed with the new token (the supplier now refuses the old one).
    const routed = await deliverOrder(orderFor('Acme'));
    const [nextJob] = (routed.body as { syncJobIds: string[] }).syncJobIds;
    expect(await settled(api, user.token, nextJob!)).toMatchObject({ status: 'completed', attempts: 1 });
    expect(sandbox.ordersFor(supplierDomain)).toHaveLength(2);
    expect(await jobsOfOrder(reseller.id, String(payload.id))).toHaveLength(1);

    const audit = (await auditOf(api, user.token, supplier.id)).filter((entry) => entry.action === 'source_store.updated');
    expect(audit.map((entry) => entry.metadata.changed)).toEqual([['accessToken']]);
    expect(JSON.stringify(audit)).not.toContain(rotatedToken);
  });

  it('replaces the webhook secret: fulfillments signed with the new one verify, the old one is refused', async ({ service, api, shop }) => {
    const { user, reseller, supplier, supplierDomain, supplierSecret, deliver } = await shop();
    const [jobId] = ((await deliver()).body as { syncJobIds: string[] }).syncJobIds;
    const job = await settled(api, user.token, jobId!);
    const newSecret = `whsec_rotated_${uniqueSuffix()}${uniqueSuffix()}`;
    recordSecret('rotated webhook secret', newSecret);
    const patched = await api.patch(`/v1/reseller_stores/${reseller.id}/source_stores/${supplier.id}`, { token: user.token, body: { webhookSecret: newSecret, name: 'Acme (rotated)' } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.name).toBe('Acme (rotated)');

    const fulfillment = buildFulfillmentPayload('custom', { orderId: job.sourceOrderId, trackingNumbers: ['ROT-1'] });
    const send = (secret: string) =>
      sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: supplierDomain, secret, topic: 'fulfillments/create', payload: fulfillment });
    expect((await send(supplierSecret)).status).toBe(401);
    const accepted = await send(newSecret);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body).toMatchObject({ syncJobIds: [jobId] });
  });

  it('validates the new credentials as at creation', async ({ api, shop }) => {
    const { user, reseller, supplier } = await shop();
    const path = `/v1/reseller_stores/${reseller.id}/source_stores/${supplier.id}`;
    expectError(await api.patch(path, { token: user.token, body: { accessToken: '' } }), 400, 'validation_failed');
    expectError(await api.patch(path, { token: user.token, body: { webhookSecret: 'x'.repeat(1025) } }), 400, 'validation_failed');
    expectError(await api.patch(path, { token: user.token, body: { accessToken: 42 } }), 400, 'validation_failed');
  });
});
