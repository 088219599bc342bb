/**
 * A shipment of an order no job recorded, which arrives while a job of its supplier is in doubt (its
 * placement answer was lost), is held for that job. When the customer then cancels the storefront
 * order and the cancellation's lookup by reference misses the supplier order (a list that does not
 * show it), the job is ended `not_placed` and no job is in doubt any more: the sweep forgot the held
 * shipment silently, though it may be (and here is) the cancelled order's. The goods of a cancelled
 * order shipped and nobody was told. Forgetting now checks it as its webhook would be checked now
 * (src/fulfillments/unplaced.ts): the order's reference names the job, which takes the shipment; an
 * order whose read is refused for good is on the job's to-do list; the supplier's own sale, its order
 * read, is forgotten with no report.
 */
import { describe, expect } from 'vitest';
import { buildFulfillmentPayload } from './sandbox/payloads.ts';
import { sendWebhook, type Sandbox } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { ANVIL, createShop, placeWithAnswerLost, sendStorefrontWebhook, settled, type Shop } from './support/cancellations.ts';
import { test } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';
import type { ApiClient } from './support/api.ts';
import type { JsonObject } from './sandbox/payloads.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '300', RECONCILE_INTERVAL_MS: '0', DIVERGENCE_INTERVAL_MS: '0' });
const it = test;

let nextOrderId = 5_470_000 + Math.floor(Math.random() * 10_000) * 10;

/**
 * Acme's job of a custom storefront order dies with every answer lost (in doubt); the supplier ships
 * (`shipment` gives the fulfillment webhook's payload): held for the job. Then the customer cancels
 * and the lookup misses the order (listed as created a day before the job): `not_placed`.
 */
async function heldThenEndedUnplaced(api: ApiClient, sandbox: Sandbox, serviceUrl: string, databaseUrl: string, shipment: (shop: Shop, sourceOrderId: string) => JsonObject) {
  const shop = await createShop(api, 'custom', 'custom');
  const order = sandbox.buildOrderPayload('custom', { id: `hu-${nextOrderId++}`, lines: [{ ...ANVIL, quantity: 1 }] });
  const { jobId, held: placed } = await placeWithAnswerLost(api, sandbox, serviceUrl, shop, order);
  const sourceOrderId = String(placed.id);
  const delivered = await sendWebhook({ targetUrl: `${serviceUrl}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'fulfillments/create', payload: shipment(shop, sourceOrderId) });
  expect(delivered.status).toBe(200);
  expect(delivered.body).toMatchObject({ received: true, syncJobIds: [] });
  expect(await heldOf(databaseUrl, shop)).toHaveLength(1);

  const stored = sandbox.orderOf(shop.acme.shopDomain, 'custom', sourceOrderId)!;
  sandbox.seedOrder(shop.acme.shopDomain, 'custom', { ...stored, createdAt: new Date(Date.now() - 24 * 60 * 60_000).toISOString() });
  await sendStorefrontWebhook(serviceUrl, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
  const ended = await waitForJob(api, shop.user.token, jobId, settled);
  expect(ended).toMatchObject({ status: 'completed', cancellations: [{ status: 'completed', outcome: 'not_placed', scope: 'order' }] });
  // The sweep no longer holds it for anyone.
  await waitFor(async () => (await heldOf(databaseUrl, shop)).length === 0, 10_000, 'held fulfillment forgotten');
  return { shop, jobId, sourceOrderId };
}

function heldOf(databaseUrl: string, shop: Shop) {
  return queryRows<{ source_order_id: string }>(databaseUrl, 'select source_order_id from held_fulfillments where reseller_store_id = $1', [shop.reseller.id]);
}

function todoOf(api: ApiClient, shop: Shop) {
  return api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token }).then((answer) => answer.body.data as { type: string; syncJobId: string; detail: string }[]);
}

describe('a shipment held for a job in doubt, the job then ended not_placed by a cancellation whose lookup missed the order', () => {
  it("is taken by that job when the order's reference names it, not forgotten: tracking to the customer, too_late on the to-do list", async ({ api, sandbox, service }) => {
    const { shop, jobId, sourceOrderId } = await heldThenEndedUnplaced(api, sandbox, service.url, service.databaseUrl, (shop, id) => sandbox.shipOrder(shop.acme.shopDomain, 'custom', id, { trackingNumbers: ['HELD-UP-1'] })[0]!);
    const job = await waitForJob(api, shop.user.token, jobId, (j) => j.fulfillments?.[0]?.status === 'completed', 15_000, 'held tracking pushed for');
    expect(job).toMatchObject({ sourceOrderId, cancellations: [{ status: 'completed', outcome: 'too_late' }] });
    expect(job.fulfillments).toMatchObject([{ trackingNumbers: ['HELD-UP-1'] }]);
    expect(sandbox.fulfillmentsFor(shop.reseller.shopDomain)).toHaveLength(1);
    expect(await todoOf(api, shop)).toEqual([expect.objectContaining({ type: 'too_late', syncJobId: jobId })]);
    const found = await queryRows<{ metadata: any }>(service.databaseUrl, "select metadata from audit_entries where resource_id = $1 and action = 'sync_job.order_found'", [jobId]);
    expect(found).toEqual([{ metadata: expect.objectContaining({ sourceOrderId, foundBy: expect.stringContaining('fulfillment webhook') }) }]);
  });

  it('whose order the supplier answers 404 for is on the to-do list of the job ended not_placed, not forgotten unnoticed', async ({ api, sandbox, service }) => {
    const gone = `ord_gone_${nextOrderId++}`;
    const { shop, jobId } = await heldThenEndedUnplaced(api, sandbox, service.url, service.databaseUrl, () => buildFulfillmentPayload('custom', { orderId: gone, trackingNumbers: ['HELD-404'] }));
    await waitFor(async () => (await todoOf(api, shop)).length > 0, 5_000, 'to-do entry');
    const todo = await todoOf(api, shop);
    expect(todo).toEqual([expect.objectContaining({ type: 'too_late', syncJobId: jobId, detail: expect.stringContaining(`order ${gone} (tracking HELD-404)`) })]);
    expect(todo[0]!.detail).toContain('reading the order answered 404');
    const audits = await queryRows<{ metadata: any }>(service.databaseUrl, "select metadata from audit_entries where reseller_store_id = $1 and action = 'cancellation.shipment_unattributed'", [shop.reseller.id]);
    expect(audits).toEqual([{ metadata: expect.objectContaining({ syncJobId: jobId, sourceOrderId: gone, trackingNumbers: ['HELD-404'] }) }]);
    // Nothing proves it was the job's: nothing recorded on the job, nothing pushed.
    const job = await waitForJob(api, shop.user.token, jobId, () => true);
    expect(job).toMatchObject({ sourceOrderId: null, cancellations: [{ status: 'completed', outcome: 'not_placed' }] });
    expect(sandbox.fulfillmentsFor(shop.reseller.shopDomain)).toEqual([]);
  });

  it('whose order the supplier cannot answer for now is kept and read again at each sweep; after 7 days it is reported, then forgotten', async ({ api, sandbox, service }) => {
    // Ended not_placed first, then a held row (as a shipment held while the job was in doubt) and a supplier that answers 500.
    const { shop, jobId, sourceOrderId } = await heldThenEndedUnplaced(api, sandbox, service.url, service.databaseUrl, (shop) => sandbox.directSaleFulfillment(shop.acme.shopDomain, 'custom', { trackingNumbers: ['OWN-FIRST'] }));
    sandbox.setFaults(shop.acme.shopDomain, { alwaysFail: true, status: 500 });
    const insertHeld = (receivedAt: string) =>
      queryRows(
        service.databaseUrl,
        `insert into held_fulfillments (id, owner_id, reseller_store_id, source_store_id, source_order_id, dedupe_key, webhook_id, tracking, received_at)
         select $1, owner_id, id, $3, $4, 'down-key', null, $5::jsonb, ${receivedAt} from reseller_stores where id = $2`,
        [`hf_down_${nextOrderId++}`, shop.reseller.id, shop.acme.id, sourceOrderId, JSON.stringify({ numbers: ['HELD-500'], urls: [], company: null })],
      );
    await insertHeld('now()');
    const reads = () => sandbox.requestsFor(shop.acme.shopDomain).filter((request) => request.method === 'GET' && request.path.includes(sourceOrderId)).length;
    await waitFor(async () => reads() >= 2, 5_000, 'two sweeps reading the order');
    expect(await heldOf(service.databaseUrl, shop)).toHaveLength(1);
    expect(await todoOf(api, shop)).toEqual([]);
    // Seven days on (the job older still), the supplier still down: reported as a read refused for good, and forgotten.
    await queryRows(service.databaseUrl, "update sync_jobs set created_at = now() - interval '9 days' where id = $1", [jobId]);
    await queryRows(service.databaseUrl, "update held_fulfillments set received_at = now() - interval '8 days' where reseller_store_id = $1", [shop.reseller.id]);
    await waitFor(async () => (await heldOf(service.databaseUrl, shop)).length === 0, 5_000, 'held fulfillment forgotten');
    const todo = await todoOf(api, shop);
    expect(todo).toEqual([expect.objectContaining({ type: 'too_late', syncJobId: jobId, detail: expect.stringContaining(`order ${sourceOrderId} (tracking HELD-500)`) })]);
    expect(todo[0]!.detail).toContain('kept failing for 7 days');
    sandbox.clearFaults(shop.acme.shopDomain);
  });

  it("of the supplier's own sale, its order read, is forgotten with no report", async ({ api, sandbox, service }) => {
    const { shop, jobId } = await heldThenEndedUnplaced(api, sandbox, service.url, service.databaseUrl, (shop) => sandbox.directSaleFulfillment(shop.acme.shopDomain, 'custom', { trackingNumbers: ['OWN-HELD'] }));
    // A sweep or two more: still nothing.
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(await todoOf(api, shop)).toEqual([]);
    const audits = await queryRows(service.databaseUrl, "select 1 from audit_entries where reseller_store_id = $1 and action = 'cancellation.shipment_unattributed'", [shop.reseller.id]);
    expect(audits).toEqual([]);
    expect(await waitForJob(api, shop.user.token, jobId, () => true)).toMatchObject({ sourceOrderId: null, cancellations: [{ outcome: 'not_placed' }] });
  });
});
