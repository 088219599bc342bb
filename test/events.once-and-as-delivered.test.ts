/**
 * Events for integrators (events.md) that must not be emitted, or must be emitted once.
 */
import { describe, expect } from 'vitest';
import { sendWebhook } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', WEBHOOK_DELIVERY_SCHEDULE_MS: '0,200,400' });

let nextOrderId = 970_000 + Math.floor(Math.random() * 10_000) * 10;

interface Shop {
  user: TestUser;
  reseller: { id: string; shopDomain: string };
  resellerSecret: string;
  supplier: { id: string; shopDomain: string; vendorTag: string };
  path: string;
}

const it = test
  .extend('openShop', { scope: 'file' }, ({ api, receiver }) => async (): Promise<Shop> => {
    const user = await registerUser(api);
    const resellerSecret = `whsec_reseller_${uniqueSuffix()}`;
    const reseller = await createResellerStore(api, user.token, { platform: 'platform_a', webhookSecret: resellerSecret });
    const supplier = await createSourceStore(api, user.token, reseller.id, { platform: 'custom', vendorTag: `Acme ${uniqueSuffix()}`, webhookSecret: `whsec_supplier_${uniqueSuffix()}` });
    const path = `/events/${uniqueSuffix()}`;
    const endpoint = await api.post('/v1/webhook_endpoints', { token: user.token, body: { url: receiver.url(path), enabledEvents: ['*'] } });
    expect(endpoint.status).toBe(201);
    receiver.trust(path, [endpoint.body.secret]);
    return { user, reseller, resellerSecret, supplier, path };
  })
  .extend('deliverOrder', { scope: 'file' }, ({ service, sandbox }) => async (shop: Shop, id: number) => {
    const payload = sandbox.buildOrderPayload('platform_a', { id, lines: [{ sku: 'A-1', title: 'Anvil', vendor: shop.supplier.vendorTag, quantity: 1, price: '25.00' }] });
    sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', payload);
    return sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: shop.reseller.shopDomain, secret: shop.resellerSecret, topic: 'orders/create', payload });
  });

describe('order.unmatched', () => {
  it('is not emitted by a redelivery of an order whose lines were all routed, after its supplier was deleted', async ({ api, receiver, openShop, deliverOrder }) => {
    const shop = await openShop();
    const orderId = nextOrderId++;
    const first = await deliverOrder(shop, orderId);
    expect(first.status).toBe(200);
    const [jobId] = (first.body as { syncJobIds: string[] }).syncJobIds;
    expect(jobId).toBeDefined();
    await waitFor(async () => receiver.at(shop.path).some((delivery) => delivery.event?.type === 'sync_job.created'), 10_000, 'sync_job.created');

    // The supplier leaves; the storefront then redelivers the order (a timeout on its side, say).
    const deleted = await api.delete(`/v1/reseller_stores/${shop.reseller.id}/source_stores/${shop.supplier.id}`, { token: shop.user.token });
    expect(deleted.status).toBe(204);
    const again = await deliverOrder(shop, orderId);
    expect(again.status).toBe(200);
    // The order was routed once, by its first delivery: the redelivery answers with its job.
    expect((again.body as { syncJobIds: string[] }).syncJobIds).toEqual([jobId]);

    // Its line went to the supplier: nothing was unmatched, so no integrator is told to route it by hand.
    const events = await api.get(`/v1/events?type=order.unmatched&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(events.status).toBe(200);
    expect(events.body.data).toEqual([]);
    const audit = await api.get(`/v1/audit_log?action=order.lines_unmatched&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(audit.status).toBe(200);
    expect(audit.body.data).toEqual([]);
  });
});

describe('GET /v1/events', () => {
  /** The fields a sync job's GET had when events were introduced (16152c3): later releases added more. */
  const FIRST_RELEASE_JOB_FIELDS = ['id', 'resellerStoreId', 'sourceStoreId', 'status', 'attempts', 'externalOrderId', 'sourceOrderId', 'errorMessage', 'completedAt', 'failedAt', 'deadAt', 'createdAt', 'updatedAt', 'fulfillments'];

  it('lists an event kept from an earlier release, whose job had fewer fields, exactly as it was delivered', async ({ service, api, receiver, openShop, deliverOrder }) => {
    const shop = await openShop();
    const first = await deliverOrder(shop, nextOrderId++);
    expect(first.status).toBe(200);
    const delivered = await waitFor(async () => receiver.at(shop.path).find((delivery) => delivery.event?.type === 'sync_job.created'), 10_000, 'sync_job.created');

    // The event as the release that wrote it (within the 30 days events are kept) delivered it: the
    // job as its GET showed it then, before supplierCancelledAt, cancellations, … were added.
    const stored = JSON.parse(delivered.body);
    stored.data.object = Object.fromEntries(Object.entries(stored.data.object).filter(([key]) => FIRST_RELEASE_JOB_FIELDS.includes(key)));
    const payload = JSON.stringify(stored);
    await queryRows(service.databaseUrl, 'update events set payload = $1 where id = $2', [payload, stored.id]);

    const one = await api.get(`/v1/events/${stored.id}`, { token: shop.user.token });
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    const { request_id: _requestId, ...event } = one.body;
    expect(event).toEqual(JSON.parse(payload));

    const list = await api.get(`/v1/events?reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.data.find((listed: { id: string }) => listed.id === stored.id)).toEqual(JSON.parse(payload));
  });
});
