/**
 * Every tracking number reaches the customer, once (issue 13, item 5). Each case is a supplier
 * behaviour that used to lose or duplicate a fulfillment: answers lost until the job died (its
 * fulfillment was acknowledged and dropped), a redelivery with its JSON keys reordered (pushed
 * twice), a direct sale while an unrelated job was unfinished (503 until it finished), tracking
 * without a number for a reseller platform that needs one (retried until dead).
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { buildFulfillmentPayload, sendWebhook, type Faults, type FulfillmentPayloadInput } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { auditOf, getJob, settled, waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH, queueMessageCount, uniqueSuffix } from './support/webhooks.ts';

// Sweeps often, so held fulfillments are claimed or forgotten within the test's patience.
test.override('serviceEnv', { SWEEP_INTERVAL_MS: '300' });

let nextOrderId = 930_000 + Math.floor(Math.random() * 10_000) * 10;

interface Shop {
  user: TestUser;
  reseller: { id: string; shopDomain: string; platform: Platform };
  resellerSecret: string;
  supplier: { id: string; shopDomain: string; platform: Platform };
  supplierSecret: string;
}

function fulfillmentOf(shop: Shop, input: FulfillmentPayloadInput) {
  return buildFulfillmentPayload(shop.supplier.platform, input);
}

const expectReceived = (response: { status: number; body: unknown }, syncJobIds: string[]) => {
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  expect(response.body).toMatchObject({ received: true, syncJobIds });
};

const it = test
  .extend('shopWith', { scope: 'file' }, ({ api }) => async (resellerPlatform: Platform, supplierPlatform: Platform): Promise<Shop> => {
    const user = await registerUser(api);
    const resellerSecret = `whsec_reseller_${uniqueSuffix()}`;
    const reseller = await createResellerStore(api, user.token, { platform: resellerPlatform, webhookSecret: resellerSecret });
    const supplierSecret = `whsec_supplier_${uniqueSuffix()}`;
    const supplier = await createSourceStore(api, user.token, reseller.id, { platform: supplierPlatform, vendorTag: 'Acme', webhookSecret: supplierSecret });
    return { user, reseller, resellerSecret, supplier, supplierSecret };
  })
  /** A customer's order routed to the shop's supplier through the order webhook (seeded on the reseller platform too, for the tracking). */
  .extend('routeOrder', { scope: 'file' }, ({ service, sandbox }) => async (shop: Shop, supplierFaults: Faults = {}): Promise<{ jobId: string; resellerOrderId: string }> => {
    sandbox.setFaults(shop.supplier.shopDomain, supplierFaults);
    const id = shop.reseller.platform === 'custom' ? `ord_${nextOrderId++}` : nextOrderId++;
    const payload = sandbox.buildOrderPayload(shop.reseller.platform, { id, lines: [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 1, price: '25.00' }] });
    sandbox.seedOrder(shop.reseller.shopDomain, shop.reseller.platform, payload);
    const routed = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: shop.reseller.shopDomain, secret: shop.resellerSecret, topic: 'orders/create', payload });
    expect(routed.status, JSON.stringify(routed.body)).toBe(200);
    return { jobId: (routed.body as { syncJobIds: string[] }).syncJobIds[0]!, resellerOrderId: String(id) };
  })
  .extend('deliverFulfillment', { scope: 'file' }, ({ service }) => (shop: Shop, payload: unknown, options: { webhookId?: string; reorderKeys?: boolean } = {}) =>
    sendWebhook({
      targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
      shopDomain: shop.supplier.shopDomain,
      secret: shop.supplierSecret,
      topic: 'fulfillments/create',
      payload,
      ...options,
    }))
  .extend('heldCount', { scope: 'file' }, ({ service }) => async (shop: Shop): Promise<number> => {
    const [row] = await queryRows<{ count: string }>(service.databaseUrl, 'select count(*) from held_fulfillments where reseller_store_id = $1', [shop.reseller.id]);
    return Number(row!.count);
  })
  /** The tracking numbers the customer was sent, one entry per fulfillment added to their order. */
  .extend('customerFulfillments', { scope: 'file' }, ({ sandbox }) => (shop: Shop) =>
    sandbox.fulfillmentsFor(shop.reseller.shopDomain).map((sent) => sent.payload));

describe('a fulfillment of an order whose answers were lost', () => {
  it('is kept while the job is dead, and reaches the customer once a manual retry completes the job', async ({ api, sandbox, shopWith, routeOrder, deliverFulfillment, heldCount, customerFulfillments }) => {
    const shop = await shopWith('platform_a', 'custom');
    // The supplier accepts the order, then every answer (the first and the three idempotent replays) is lost.
    const { jobId } = await routeOrder(shop, { acceptThenDropNext: 4 });
    const dead = await settled(api, shop.user.token, jobId);
    expect(dead).toMatchObject({ status: 'dead', attempts: 4, sourceOrderId: null });
    const [placed, ...more] = sandbox.ordersFor(shop.supplier.shopDomain);
    expect(more).toHaveLength(0);

    // The supplier ships it and says so.
    const response = await deliverFulfillment(shop, fulfillmentOf(shop, { orderId: placed!.id, trackingNumbers: ['LOST-1'] }));
    expectReceived(response, []);
    expect(await heldCount(shop)).toBe(1);
    expect(customerFulfillments(shop)).toEqual([]);

    // An operator retries the job: the supplier gives back the same order (Idempotency-Key).
    const retried = await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    const done = await settled(api, shop.user.token, jobId);
    expect(done).toMatchObject({ status: 'completed', attempts: 5, sourceOrderId: String(placed!.id) });

    const withTracking = await waitForJob(
      api,
      shop.user.token,
      jobId,
      (job) => job.fulfillments.length === 1 && job.fulfillments[0].status === 'completed',
      15_000,
      'the held fulfillment to be applied',
    );
    expect(withTracking.fulfillments[0]).toMatchObject({ trackingNumbers: ['LOST-1'], attempts: 1 });
    expect(customerFulfillments(shop)).toHaveLength(1);
    expect(customerFulfillments(shop)[0]).toMatchObject({ tracking_number: 'LOST-1' });
    expect(sandbox.ordersFor(shop.supplier.shopDomain)).toHaveLength(1);
    expect(await heldCount(shop)).toBe(0);

    // Delivered once more by the supplier's platform: nothing new.
    expectReceived(await deliverFulfillment(shop, fulfillmentOf(shop, { orderId: placed!.id, trackingNumbers: ['LOST-1'] })), [jobId]);
    expect((await getJob(api, shop.user.token, jobId)).fulfillments).toHaveLength(1);
  });
});

describe('a redelivered fulfillment', () => {
  it('with its JSON keys reordered under the same webhook id is applied once', async ({ service, api, shopWith, routeOrder, deliverFulfillment, customerFulfillments }) => {
    const shop = await shopWith('custom', 'platform_b');
    const { jobId } = await routeOrder(shop);
    const job = await settled(api, shop.user.token, jobId);
    expect(job.status).toBe('completed');
    const payload = fulfillmentOf(shop, { orderId: job.sourceOrderId, trackingNumbers: ['RE-1'], trackingUrls: ['https://dhl.example/RE-1'], company: 'DHL' });
    const webhookId = `wh-${uniqueSuffix()}`;

    expectReceived(await deliverFulfillment(shop, payload, { webhookId }), [jobId]);
    expectReceived(await deliverFulfillment(shop, payload, { webhookId, reorderKeys: true }), [jobId]);
    // The same fulfillment under another webhook id (a captured delivery replayed), reordered too.
    expectReceived(await deliverFulfillment(shop, payload, { reorderKeys: true }), [jobId]);
    // The same webhook id with a changed body (a redelivery of an edited event) is still that event.
    expectReceived(await deliverFulfillment(shop, { ...payload, tracking_link: 'https://dhl.example/RE-1?lang=en' }, { webhookId }), [jobId]);

    const detail = await waitForJob(api, shop.user.token, jobId, (current) => current.fulfillments[0]?.status === 'completed', 15_000, 'the fulfillment');
    expect(detail.fulfillments).toHaveLength(1);
    expect(await queueMessageCount(service.databaseUrl, 'fulfillment.propagate', [detail.fulfillments[0].id])).toBe(1);
    expect(customerFulfillments(shop)).toHaveLength(1);

    // A second shipment of the order (another tracking number) is a fulfillment of its own.
    expectReceived(await deliverFulfillment(shop, fulfillmentOf(shop, { orderId: job.sourceOrderId, trackingNumbers: ['RE-2'] })), [jobId]);
    await waitForJob(api, shop.user.token, jobId, (current) => current.fulfillments.length === 2 && current.fulfillments[1].status === 'completed');
    expect(customerFulfillments(shop)).toHaveLength(2);
  });
});

describe("a supplier's direct sale", () => {
  it('is answered 200 at once while an unrelated job of the supplier is unfinished, and never reaches a customer', async ({ api, sandbox, shopWith, routeOrder, deliverFulfillment, heldCount, customerFulfillments }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { jobId } = await routeOrder(shop, { latencyMs: 2_500 });
    await waitFor(async () => (await getJob(api, shop.user.token, jobId)).status === 'processing', 10_000, 'the job to be in flight');

    const directSale = sandbox.directSaleFulfillment(shop.supplier.shopDomain, 'platform_a', { trackingNumbers: ['OWN-1'] });
    const startedAt = performance.now();
    const response = await deliverFulfillment(shop, directSale);
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    expectReceived(response, []);

    sandbox.clearFaults(shop.supplier.shopDomain);
    expect(await settled(api, shop.user.token, jobId)).toMatchObject({ status: 'completed', attempts: 1 });
    // Kept while the job in flight could have owned it; forgotten once it completed with its own order.
    await waitFor(async () => (await heldCount(shop)) === 0, 10_000, 'the direct sale to be forgotten');
    expect((await getJob(api, shop.user.token, jobId)).fulfillments).toEqual([]);
    expect(customerFulfillments(shop)).toEqual([]);
  });

  it('is acknowledged and not kept when no job of the supplier could own it', async ({ api, sandbox, shopWith, routeOrder, deliverFulfillment, heldCount, customerFulfillments }) => {
    const shop = await shopWith('custom', 'custom');
    const { jobId } = await routeOrder(shop);
    expect((await settled(api, shop.user.token, jobId)).status).toBe('completed');
    const directSale = sandbox.directSaleFulfillment(shop.supplier.shopDomain, 'custom', { trackingNumbers: ['OWN-2'] });
    expectReceived(await deliverFulfillment(shop, directSale), []);
    expect(await heldCount(shop)).toBe(0);
    expect(customerFulfillments(shop)).toEqual([]);
  });
});

describe('tracking without a number', () => {
  it('is skipped with a reason, audited and never sent where the reseller platform needs a number', async ({ service, api, shopWith, routeOrder, deliverFulfillment, customerFulfillments }) => {
    const shop = await shopWith('platform_b', 'platform_a');
    const { jobId } = await routeOrder(shop);
    const job = await settled(api, shop.user.token, jobId);
    expect(job.status).toBe('completed');
    const payload = fulfillmentOf(shop, { orderId: job.sourceOrderId, fulfillmentId: nextOrderId++, trackingNumbers: [], trackingUrls: ['https://track.example/x'] });
    expectReceived(await deliverFulfillment(shop, payload), [jobId]);

    const [fulfillment, ...more] = (await getJob(api, shop.user.token, jobId)).fulfillments;
    expect(more).toHaveLength(0);
    expect(fulfillment).toMatchObject({ status: 'skipped', attempts: 0, trackingNumbers: [], resellerFulfillmentId: null, deadAt: null });
    expect(fulfillment.errorMessage).toContain('platform_b needs one');
    expect(await queueMessageCount(service.databaseUrl, 'fulfillment.propagate', [fulfillment.id])).toBe(0);
    const audit = await auditOf(api, shop.user.token, fulfillment.id);
    expect(audit.map((entry) => entry.action)).toEqual(['fulfillment.received', 'fulfillment.skipped']);
    expect(audit[1].metadata).toMatchObject({ syncJobId: jobId, reason: fulfillment.errorMessage });
    expect(customerFulfillments(shop)).toEqual([]);
    // A redelivery is the same skipped fulfillment.
    expectReceived(await deliverFulfillment(shop, payload), [jobId]);
    expect((await getJob(api, shop.user.token, jobId)).fulfillments).toHaveLength(1);
  });

  it('is sent where the reseller platform takes a fulfillment without one', async ({ api, shopWith, routeOrder, deliverFulfillment, customerFulfillments }) => {
    const shop = await shopWith('platform_a', 'custom');
    const { jobId } = await routeOrder(shop);
    const job = await settled(api, shop.user.token, jobId);
    expectReceived(await deliverFulfillment(shop, fulfillmentOf(shop, { orderId: job.sourceOrderId, trackingNumbers: [], trackingUrls: ['https://track.example/y'] })), [jobId]);
    const detail = await waitForJob(api, shop.user.token, jobId, (current) => current.fulfillments[0]?.status === 'completed', 15_000, 'the fulfillment');
    expect(detail.fulfillments[0]).toMatchObject({ attempts: 1, trackingNumbers: [], trackingUrls: ['https://track.example/y'] });
    expect(customerFulfillments(shop)).toHaveLength(1);
  });
});
