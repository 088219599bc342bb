/**
 * A job whose placement answer was lost, whose whole storefront order is then cancelled, is ended
 * unplaced when its cancellation's lookup by reference finds nothing (`not_placed`). A supplier list
 * that does not show the order (here: the order's creation time is before the job's, so a list of
 * the orders created since the job leaves it out) makes the lookup miss an order that exists. When
 * the supplier ships it, the shipment must not be dropped as the supplier's own sale: the order's
 * reference names the job, so the job records the order, the customer gets the tracking, and the
 * cancellation turns `too_late` on the reseller's to-do list (the goods are on their way).
 */
import { describe, expect } from 'vitest';
import { sendWebhook } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { ANVIL, createShop, placeWithAnswerLost, sendStorefrontWebhook, settled, type Shop } from './support/cancellations.ts';
import { test } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { check, type Tenant } from './support/watch.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';
import type { Sandbox } from './sandbox/server.ts';
import type { ApiClient } from './support/api.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '300', RECONCILE_INTERVAL_MS: '0', DIVERGENCE_INTERVAL_MS: '0' });
const it = test;

let nextOrderId = 5_170_000 + Math.floor(Math.random() * 10_000) * 10;

/** A custom storefront and a custom supplier (Acme); Acme's job of an order dies with every answer lost, then the customer cancels the order and the lookup misses it. */
async function endedUnplaced(api: ApiClient, sandbox: Sandbox, serviceUrl: string) {
  const shop = await createShop(api, 'custom', 'custom');
  const order = sandbox.buildOrderPayload('custom', { id: `up-${nextOrderId++}`, lines: [{ ...ANVIL, quantity: 1 }] });
  const { jobId, held: placed } = await placeWithAnswerLost(api, sandbox, serviceUrl, shop, order);
  const sourceOrderId = String(placed.id);
  // The supplier's list shows the order as created a day before: a lookup of the orders created since the job misses it.
  const stored = sandbox.orderOf(shop.acme.shopDomain, 'custom', sourceOrderId)!;
  sandbox.seedOrder(shop.acme.shopDomain, 'custom', { ...stored, createdAt: new Date(Date.now() - 24 * 60 * 60_000).toISOString() });
  await sendStorefrontWebhook(serviceUrl, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
  const ended = await waitForJob(api, shop.user.token, jobId, settled);
  expect(ended).toMatchObject({ status: 'completed', sourceOrderId: null, cancellations: [{ status: 'completed', outcome: 'not_placed', scope: 'order' }] });
  return { shop, jobId, sourceOrderId };
}

async function expectShipmentTaken(api: ApiClient, sandbox: Sandbox, databaseUrl: string, shop: Shop, jobId: string, sourceOrderId: string, trackingNumber: string, foundBy: Record<string, unknown>) {
  const job = await waitForJob(api, shop.user.token, jobId, (j) => j.sourceOrderId === sourceOrderId && j.fulfillments?.[0]?.status === 'completed', 15_000, 'tracking pushed for');
  expect(job.fulfillments).toHaveLength(1);
  expect(job.fulfillments[0].trackingNumbers).toEqual([trackingNumber]);
  const pushed = sandbox.fulfillmentsFor(shop.reseller.shopDomain);
  expect(pushed).toHaveLength(1);
  expect(JSON.stringify(pushed[0]!.body)).toContain(trackingNumber);
  // The customer's cancellation came too late: the goods are on their way, and the reseller is told.
  expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'too_late' }]);
  const divergences = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
  expect(divergences.body.data).toEqual([expect.objectContaining({ type: 'too_late', syncJobId: jobId })]);
  const found = await queryRows<{ metadata: any }>(databaseUrl, "select metadata from audit_entries where resource_id = $1 and action = 'sync_job.order_found'", [jobId]);
  expect(found).toEqual([{ metadata: expect.objectContaining({ sourceOrderId, ...foundBy }) }]);
}

describe('a job ended not_placed whose supplier order existed after all, then shipped', () => {
  it('its fulfillments/create webhook is taken: the order is recorded on the job and the tracking reaches the customer', async ({ api, sandbox, service }) => {
    const { shop, jobId, sourceOrderId } = await endedUnplaced(api, sandbox, service.url);
    const [payload] = sandbox.shipOrder(shop.acme.shopDomain, 'custom', sourceOrderId, { trackingNumbers: ['UNPLACED-W1'] });
    const delivered = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'fulfillments/create', payload: payload! });
    expect(delivered.status).toBe(200);
    expect(delivered.body).toMatchObject({ received: true, syncJobIds: [jobId] });
    await expectShipmentTaken(api, sandbox, service.databaseUrl, shop, jobId, sourceOrderId, 'UNPLACED-W1', { foundBy: expect.stringContaining('fulfillment webhook') });
  });

  it('a divergence-watch pass that lists it shipped (its webhook lost) takes it the same way, audited fulfillment.reconciled', async ({ api, sandbox, service }) => {
    const { shop, jobId, sourceOrderId } = await endedUnplaced(api, sandbox, service.url);
    sandbox.shipOrder(shop.acme.shopDomain, 'custom', sourceOrderId, { trackingNumbers: ['UNPLACED-P1'] });
    const tenant = { target: { api, url: service.url, databaseUrl: service.databaseUrl }, user: shop.user, reseller: { ...shop.reseller, secret: shop.reseller.secret }, suppliers: [] } as unknown as Tenant;
    const pass = await check(tenant);
    expect(pass).toMatchObject({ status: 'succeeded', error: null });
    await expectShipmentTaken(api, sandbox, service.databaseUrl, shop, jobId, sourceOrderId, 'UNPLACED-P1', { foundBy: expect.stringContaining('divergence watch'), watchPassId: pass.id });
    const reconciled = await queryRows<{ resource_id: string }>(service.databaseUrl, "select resource_id from audit_entries where reseller_store_id = $1 and action = 'fulfillment.reconciled'", [shop.reseller.id]);
    expect(reconciled).toHaveLength(1);
    // A second pass finds nothing more to do.
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(sandbox.fulfillmentsFor(shop.reseller.shopDomain)).toHaveLength(1);
  });
});

/**
 * When the service cannot tell whether such a shipment is the job's (the supplier order's read
 * answers an error that will not change), it was acknowledged as the supplier's own sale and dropped with no trace:
 * a parcel of an order the customer cancelled, and nobody told. It is now on the reseller's to-do
 * list (a `too_late` entry naming the shipment) with an audit entry, the cancellation left `not_placed`.
 */
describe('a shipment that may be the order of a job ended not_placed, which the service cannot attribute', () => {
  async function expectReported(api: ApiClient, databaseUrl: string, shop: Shop, jobId: string, sourceOrderId: string, trackingNumber: string, why: string) {
    const divergences = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(divergences.body.data).toEqual([expect.objectContaining({ type: 'too_late', syncJobId: jobId, detail: expect.stringContaining(`order ${sourceOrderId} (tracking ${trackingNumber})`) })]);
    expect(divergences.body.data[0].detail).toContain(why);
    const audits = await queryRows<{ metadata: any }>(databaseUrl, "select metadata from audit_entries where reseller_store_id = $1 and action = 'cancellation.shipment_unattributed'", [shop.reseller.id]);
    expect(audits).toEqual([{ metadata: expect.objectContaining({ syncJobId: jobId, sourceOrderId, trackingNumbers: [trackingNumber], why: expect.stringContaining(why) }) }]);
    // Nothing proves the order was the job's: the job and its cancellation are as they were, nothing pushed.
    const job = await waitForJob(api, shop.user.token, jobId, () => true);
    expect(job).toMatchObject({ sourceOrderId: null, cancellations: [{ status: 'completed', outcome: 'not_placed' }] });
    expect(job.fulfillments ?? []).toEqual([]);
  }

  it('the supplier order read answers 404: the shipment is on the to-do list, not dropped unnoticed', async ({ api, sandbox, service }) => {
    const { shop, jobId, sourceOrderId } = await endedUnplaced(api, sandbox, service.url);
    const [payload] = sandbox.shipOrder(shop.acme.shopDomain, 'custom', sourceOrderId, { trackingNumbers: ['UNREAD-404'] });
    sandbox.setFaults(shop.acme.shopDomain, { failNext: 1, status: 404 });
    const delivered = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'fulfillments/create', payload: payload! });
    expect(delivered.status).toBe(200);
    expect(delivered.body).toMatchObject({ received: true, syncJobIds: [] });
    await expectReported(api, service.databaseUrl, shop, jobId, sourceOrderId, 'UNREAD-404', 'reading the order answered 404');
    expect(sandbox.fulfillmentsFor(shop.reseller.shopDomain)).toEqual([]);
  });

  it('a shipment more than 60 days after the job is not read and reports nothing: every own sale of the supplier would', async ({ api, sandbox, service }) => {
    const { shop, jobId, sourceOrderId } = await endedUnplaced(api, sandbox, service.url);
    await queryRows(service.databaseUrl, "update sync_jobs set created_at = now() - interval '61 days' where id = $1", [jobId]);
    const reads = sandbox.requestsFor(shop.acme.shopDomain).length;
    const [payload] = sandbox.shipOrder(shop.acme.shopDomain, 'custom', sourceOrderId, { trackingNumbers: ['LATE-61D'] });
    const delivered = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'fulfillments/create', payload: payload! });
    expect(delivered.status).toBe(200);
    expect(delivered.body).toMatchObject({ received: true, syncJobIds: [] });
    expect(sandbox.requestsFor(shop.acme.shopDomain)).toHaveLength(reads);
    const divergences = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(divergences.body.data).toEqual([]);
    const audits = await queryRows(service.databaseUrl, "select 1 from audit_entries where reseller_store_id = $1 and action = 'cancellation.shipment_unattributed'", [shop.reseller.id]);
    expect(audits).toEqual([]);
  });

  it("a shipment of the supplier's own sale, its order read, reports nothing", async ({ api, sandbox, service }) => {
    const { shop } = await endedUnplaced(api, sandbox, service.url);
    const payload = sandbox.directSaleFulfillment(shop.acme.shopDomain, 'custom', { trackingNumbers: ['OWN-SALE'] });
    const delivered = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'fulfillments/create', payload });
    expect(delivered.status).toBe(200);
    const divergences = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(divergences.body.data).toEqual([]);
  });
});
