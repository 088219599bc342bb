/**
 * Review item f9 (a): a storefront order some of whose lines were cancelled before it was routed,
 * whose partial cancellation webhook was lost (or comes late), and which is routed later from the
 * storefront's own order (reconciliation's list; a manual job's read of the order). A custom order's
 * lines carry `cancelledQuantity`, a platform_a order's `fulfillable_quantity` (platforms.md; its
 * refunds are not in the Order): only the open quantities may reach the supplier, and the partial
 * cancellation's webhook, whenever it arrives, must not cut the same quantities again (order-changes.md:
 * "Repeated or overlapping requests never cancel more than was ordered"). Before: both paths placed
 * the whole quantity, and the supplier shipped what the customer had cancelled.
 */
import { describe, expect } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { test } from './support/fixtures.ts';
import { finishedRun, idOf, openReseller, orderOf, reconcile, supplierOrders, type Reseller, type Target } from './support/reconciliation.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { sendWebhook, type JsonObject, type Sandbox } from './sandbox/server.ts';
import { ORDERS_PATH } from './support/webhooks.ts';

test.override('serviceEnv', { RECONCILE_INTERVAL_MS: '0', RECONCILE_GRACE_MS: '0', DIVERGENCE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

const seconds = (n: number) => new Date(Date.now() + n * 1000).toISOString();

let nextRefundId = 91_000 + Math.floor(Math.random() * 1000) * 10;

/**
 * An order of 2 anvils, one of which the customer cancelled at `cancelledAt` (the order's last
 * change), placed on the storefront with its orders/create webhook lost: a custom order's line shows
 * `cancelledQuantity` 1, a platform_a order's line `fulfillable_quantity` 1 (a refund with
 * restock_type cancel; the Order does not carry its refunds).
 */
async function partlyCancelledOrder(sandbox: Sandbox, reseller: Reseller, cancelledAt: string): Promise<JsonObject> {
  const order = orderOf(sandbox, reseller) as Record<string, any>;
  if (reseller.store.platform === 'custom') {
    order.lines[0].cancelledQuantity = 1;
    order.updatedAt = cancelledAt;
  } else {
    order.line_items[0].fulfillable_quantity = 1;
    order.updated_at = cancelledAt;
  }
  sandbox.setFaults(reseller.store.shopDomain, { dropWebhooksNext: 1 });
  expect(await sandbox.placeCustomerOrder(reseller.store.shopDomain, reseller.store.platform, order)).toEqual({ dropped: true });
  return order;
}

/**
 * The storefront's cancellation of `quantity` anvils made at `cancelledAt` (null: a time the service cannot read), as its webhook carries it: a custom
 * orders/cancelled with lines, a platform_a refunds/create with restock_type cancel.
 */
function cancelLines(reseller: Reseller, order: Record<string, any>, cancelledAt: string | null, quantity = 1) {
  const delivery = { targetUrl: `${reseller.target.url}${ORDERS_PATH}`, shopDomain: reseller.store.shopDomain, secret: reseller.secret };
  if (reseller.store.platform === 'custom') {
    return sendWebhook({ ...delivery, topic: 'orders/cancelled', payload: { id: order.id, cancelledAt: cancelledAt ?? 'a while ago', lines: [{ sku: 'ANV-1', quantity }] } });
  }
  const lineItem = order.line_items[0];
  const refund = {
    id: nextRefundId++,
    order_id: order.id,
    ...(cancelledAt !== null && { created_at: cancelledAt }),
    note: null,
    refund_line_items: [{ id: nextRefundId++, line_item_id: lineItem.id, quantity, restock_type: 'cancel', line_item: lineItem }],
    transactions: [],
  };
  return sendWebhook({ ...delivery, topic: 'refunds/create', payload: refund });
}

const quantitiesOf = (supplierOrder: { body: unknown }) => (supplierOrder.body as { lines: { sku: string; quantity: number }[] }).lines.map(({ sku, quantity }) => [sku, quantity]);

describe.each(['custom', 'platform_a'] as const)('a %s storefront order routed with a line partly cancelled', (platform) => {
  it('reconciliation places the open quantity only; the late partial cancellation webhook cuts nothing more and calls no supplier', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const cancelledAt = seconds(-2);
    const order = await partlyCancelledOrder(sandbox, reseller, cancelledAt);

    expect(await finishedRun(reseller, await reconcile(reseller))).toMatchObject({ status: 'succeeded', ordersRouted: 1 });
    const [placed] = await supplierOrders(sandbox, reseller, 1);
    expect(quantitiesOf(placed!)).toEqual([['ANV-1', 1]]);
    const jobs = await target.api.get(`/v1/sync_jobs?reseller_store_id=${reseller.store.id}`, { token: reseller.user.token });
    const jobId = jobs.body.data[0].id as string;
    const job = await waitForJob(target.api, reseller.user.token, jobId, (j) => j.status === 'completed');
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'not_placed', scope: 'lines', lines: [{ sku: 'ANV-1', quantity: 1 }] }]);

    // The customer's partial cancellation, delivered late (a platform retry): the same anvil.
    const late = await cancelLines(reseller, order as Record<string, any>, cancelledAt);
    expect(late.status, JSON.stringify(late.body)).toBe(200);
    expect(late.body).toMatchObject({ received: true, syncJobIds: [] });
    await delay(500);
    expect(sandbox.cancellationsFor(reseller.supplier.shopDomain)).toEqual([]);
    expect((await waitForJob(target.api, reseller.user.token, jobId, () => true)).cancellations).toHaveLength(1);

    // A cancellation the customer makes afterwards is still carried out: the last anvil.
    const later = await cancelLines(reseller, order as Record<string, any>, seconds(1));
    expect(later.body).toMatchObject({ received: true, syncJobIds: [jobId] });
    const cancelled = await waitForJob(target.api, reseller.user.token, jobId, (j) => j.cancellations.length === 2 && j.cancellations[1].status === 'completed');
    expect(cancelled.cancellations[1]).toMatchObject({ outcome: 'cancelled' });
    expect(sandbox.cancellationsFor(reseller.supplier.shopDomain)).toHaveLength(1);
  });

  it('the late partial cancellation webhook without a readable time is compared by its quantities: the anvil the order showed cancelled is not cut again; one for both anvils cancels the other', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const order = await partlyCancelledOrder(sandbox, reseller, seconds(-2));
    expect(await finishedRun(reseller, await reconcile(reseller))).toMatchObject({ status: 'succeeded', ordersRouted: 1 });
    const [placed] = await supplierOrders(sandbox, reseller, 1);
    expect(quantitiesOf(placed!)).toEqual([['ANV-1', 1]]);
    const jobs = await target.api.get(`/v1/sync_jobs?reseller_store_id=${reseller.store.id}`, { token: reseller.user.token });
    const jobId = jobs.body.data[0].id as string;
    await waitForJob(target.api, reseller.user.token, jobId, (j) => j.status === 'completed');

    // Its webhook, late, with no time the service can read: the one anvil the routed order showed cancelled.
    const late = await cancelLines(reseller, order as Record<string, any>, null);
    expect(late.status, JSON.stringify(late.body)).toBe(200);
    expect(late.body).toMatchObject({ received: true, syncJobIds: [] });
    await delay(500);
    expect(sandbox.cancellationsFor(reseller.supplier.shopDomain)).toEqual([]);
    expect((await waitForJob(target.api, reseller.user.token, jobId, () => true)).cancellations).toHaveLength(1);

    // A timeless one for more than that (both anvils): not among those quantities, so applied; the open anvil is cancelled.
    const both = await cancelLines(reseller, order as Record<string, any>, null, 2);
    expect(both.body).toMatchObject({ received: true, syncJobIds: [jobId] });
    const cancelled = await waitForJob(target.api, reseller.user.token, jobId, (j) => j.cancellations.length === 2 && j.cancellations[1].status === 'completed');
    expect(cancelled.cancellations[1]).toMatchObject({ outcome: 'cancelled', lines: [{ sku: 'ANV-1', quantity: 1 }] });
    expect(sandbox.cancellationsFor(reseller.supplier.shopDomain)).toHaveLength(1);
  });

  it('the partial cancellation webhook arriving before reconciliation routes the order: the quantity is cut once', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const cancelledAt = seconds(-2);
    const order = await partlyCancelledOrder(sandbox, reseller, cancelledAt);
    const early = await cancelLines(reseller, order as Record<string, any>, cancelledAt);
    expect(early.body).toMatchObject({ received: true, syncJobIds: [] });

    expect(await finishedRun(reseller, await reconcile(reseller))).toMatchObject({ status: 'succeeded', ordersRouted: 1 });
    const [placed] = await supplierOrders(sandbox, reseller, 1);
    expect(quantitiesOf(placed!)).toEqual([['ANV-1', 1]]);
  });

  it('a manual job reads the storefront order and places the open quantity only; the late webhook calls no supplier', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const cancelledAt = seconds(-2);
    const order = await partlyCancelledOrder(sandbox, reseller, cancelledAt);
    const created = await target.api.post('/v1/sync_jobs', { token: reseller.user.token, body: { source_store_id: reseller.supplier.id, external_order_id: idOf(order) } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await waitForJob(target.api, reseller.user.token, created.body.id, (j) => j.status === 'completed');
    const [placed] = await supplierOrders(sandbox, reseller, 1);
    expect(quantitiesOf(placed!)).toEqual([['ANV-1', 1]]);

    const late = await cancelLines(reseller, order as Record<string, any>, cancelledAt);
    expect(late.status, JSON.stringify(late.body)).toBe(200);
    await delay(500);
    expect(sandbox.cancellationsFor(reseller.supplier.shopDomain)).toEqual([]);
  });
});
