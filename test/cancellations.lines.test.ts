/**
 * Cancelling some lines (issue 23, item 4): a platform_a refund with restock_type cancel, a custom
 * cancellation with lines. Only the jobs holding those lines are touched, for exactly those
 * quantities, never more than is still open, and a supplier is never called twice for one quantity.
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { test } from './support/fixtures.ts';
import { ANVIL, BELL, NUT, createShop, sendStorefrontWebhook, settled, type Shop } from './support/cancellations.ts';
import { getJob, waitForJob } from './support/sync-jobs.ts';
import { queryRows } from './support/database.ts';
import { buildFulfillmentPayload, sendWebhook } from './sandbox/server.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50' });

let nextOrderId = 2_310_000 + Math.floor(Math.random() * 10_000) * 10;
let nextRefundId = 77_000;

const it = test
  .extend('shopWith', { scope: 'file' }, ({ api }) => (resellerPlatform: Platform, acmePlatform: Platform, boltPlatform?: Platform) => createShop(api, resellerPlatform, acmePlatform, boltPlatform))
  .extend('storefront', { scope: 'file' }, ({ service }) => (shop: Shop, topic: string, payload: unknown, webhookId?: string) => sendStorefrontWebhook(service.url, shop, topic, payload, webhookId))
  /** Routes an order of Acme's anvils and bells and Bolt's nuts, and waits until both jobs are placed. */
  .extend('placed', { scope: 'file' }, ({ api, sandbox, storefront }) => async (shop: Shop) => {
    const id = shop.reseller.platform === 'custom' ? `ord_${nextOrderId++}` : nextOrderId++;
    const order = sandbox.buildOrderPayload(shop.reseller.platform, { id, lines: [ANVIL, BELL, NUT] }) as Record<string, any>;
    const response = await storefront(shop, 'orders/create', order);
    const ids = (response.body as { syncJobIds: string[] }).syncJobIds;
    const jobs = await Promise.all(ids.map((jobId) => waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed')));
    return { order, acmeJob: jobs.find((job) => job.sourceStoreId === shop.acme.id), boltJob: jobs.find((job) => job.sourceStoreId === shop.bolt.id) };
  });

/** A platform_a refund of these reseller lines, as its refunds/create webhook carries it. */
function refundOf(order: Record<string, any>, lines: { sku: string; quantity: number; restock_type?: string }[]) {
  return {
    id: nextRefundId++,
    order_id: order.id,
    created_at: new Date().toISOString(),
    note: null,
    refund_line_items: lines.map(({ sku, quantity, restock_type = 'cancel' }) => {
      const lineItem = order.line_items.find((item: any) => item.sku === sku);
      return { id: nextRefundId++, line_item_id: lineItem.id, quantity, restock_type, line_item: lineItem };
    }),
    transactions: [],
  };
}

describe('a platform_a refund with restock_type cancel', () => {
  it('cancels exactly those quantities at the supplier holding the line, by its own line ids; the other supplier is untouched', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { order, acmeJob, boltJob } = await placed(shop);
    const response = await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 1 }]));
    expect(response.body).toMatchObject({ received: true, syncJobIds: [acmeJob.id] });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'A-1', quantity: 1 }] }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ orderId: acmeJob.sourceOrderId, lines: [{ sku: 'A-1', quantity: 1 }] }]);
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, 'platform_a', acmeJob.sourceOrderId) as any;
    expect(supplierOrder.line_items.map((line: any) => [line.sku, line.fulfillable_quantity])).toEqual([['A-1', 1], ['B-1', 3]]);
    expect(sandbox.cancellationsFor(shop.bolt.shopDomain)).toEqual([]);
    expect((await getJob(api, shop.user.token, boltJob.id)).cancellations).toEqual([]);
  });

  it("cancels only the refunded line's vendor when another supplier's line has the same SKU", async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('platform_a', 'custom', 'custom');
    const order = sandbox.buildOrderPayload('platform_a', { id: nextOrderId++, lines: [{ ...ANVIL, sku: 'SHARED' }, { ...NUT, sku: 'SHARED' }] }) as Record<string, any>;
    const ids = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const jobs = await Promise.all(ids.map((jobId) => waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed')));
    const acmeJob = jobs.find((job) => job.sourceStoreId === shop.acme.id);
    const boltJob = jobs.find((job) => job.sourceStoreId === shop.bolt.id);
    const acmeLine = order.line_items.find((item: any) => item.vendor === 'Acme');
    const refund = { id: nextRefundId++, order_id: order.id, created_at: new Date().toISOString(), note: null, transactions: [],
      refund_line_items: [{ id: nextRefundId++, line_item_id: acmeLine.id, quantity: 1, restock_type: 'cancel', line_item: acmeLine }] };
    const response = await storefront(shop, 'refunds/create', refund);
    expect(response.body).toMatchObject({ syncJobIds: [acmeJob.id] });
    expect((await waitForJob(api, shop.user.token, acmeJob.id, settled)).cancellations).toMatchObject([{ scope: 'lines', outcome: 'cancelled', lines: [{ sku: 'SHARED', quantity: 1 }] }]);
    expect((await getJob(api, shop.user.token, boltJob.id)).cancellations).toEqual([]);
    expect(sandbox.cancellationsFor(shop.bolt.shopDomain)).toEqual([]);
    // The order.cancelled event keeps its documented line shape.
    const events = await api.get(`/v1/events?type=order.cancelled&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(events.body.data[0].data.object.lines).toEqual([{ sku: 'SHARED', quantity: 1 }]);
  });

  it('a refunded line that names no vendor (a custom item, routed to nobody) cancels nothing at the supplier of a line with its SKU', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const order = sandbox.buildOrderPayload('platform_a', { id: nextOrderId++, lines: [{ ...ANVIL, sku: 'SHARED' }, { ...ANVIL, sku: 'SHARED', vendor: '', quantity: 1 }] }) as Record<string, any>;
    const ids = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    expect(ids).toHaveLength(1);
    const acmeJob = await waitForJob(api, shop.user.token, ids[0]!, (j) => j.status === 'completed');
    const blankLine = order.line_items.find((item: any) => item.vendor === '');
    const refund = { id: nextRefundId++, order_id: order.id, created_at: new Date().toISOString(), note: null, transactions: [],
      refund_line_items: [{ id: nextRefundId++, line_item_id: blankLine.id, quantity: 1, restock_type: 'cancel', line_item: blankLine }] };
    const response = await storefront(shop, 'refunds/create', refund);
    expect(response.body).toMatchObject({ received: true, syncJobIds: [] });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await getJob(api, shop.user.token, acmeJob.id)).cancellations).toEqual([]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toEqual([]);
  });

  it("after the supplier is deleted, a refunded line that names no vendor is still none of its lines: its job keeps the deleted supplier's vendor tag", async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const order = sandbox.buildOrderPayload('platform_a', {
      id: nextOrderId++,
      lines: [{ ...ANVIL, sku: 'SHARED' }, { ...ANVIL, sku: 'SHARED', title: 'Engraved anvil', vendor: '', quantity: 1 }, { ...BELL, sku: 'ENGRAVING', vendor: '', quantity: 1 }],
    }) as Record<string, any>;
    const ids = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    expect(ids).toHaveLength(1);
    const acmeJob = await waitForJob(api, shop.user.token, ids[0]!, (j) => j.status === 'completed');
    expect((await api.delete(`/v1/reseller_stores/${shop.reseller.id}/source_stores/${shop.acme.id}`, { token: shop.user.token })).status).toBe(204);
    const refundOfLine = (line: any) => ({ id: nextRefundId++, order_id: order.id, created_at: new Date().toISOString(), note: null, transactions: [],
      refund_line_items: [{ id: nextRefundId++, line_item_id: line.id, quantity: 1, restock_type: 'cancel', line_item: line }] });
    // Both vendor-less lines refunded: the one sharing the supplier's SKU and the one only the storefront sells.
    for (const blankLine of order.line_items.filter((item: any) => item.vendor === '')) {
      const response = await storefront(shop, 'refunds/create', refundOfLine(blankLine));
      expect(response.body).toMatchObject({ received: true, syncJobIds: [] });
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await getJob(api, shop.user.token, acmeJob.id)).cancellations).toEqual([]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toEqual([]);
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data).toEqual([]);
    // The job still knows its supplier's vendor: a refund of the Acme line reaches it (a job whose vendor were unknown would get no line cancellation at all).
    const acmeLine = order.line_items.find((item: any) => item.vendor === 'Acme');
    expect((await storefront(shop, 'refunds/create', refundOfLine(acmeLine))).body).toMatchObject({ received: true, syncJobIds: [acmeJob.id] });
    expect((await getJob(api, shop.user.token, acmeJob.id)).cancellations).toMatchObject([{ scope: 'lines', lines: [{ sku: 'SHARED', quantity: 1 }] }]);
  });

  it('never cancels more than is still open, and never calls the supplier twice for one quantity', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'custom');
    const { order, acmeJob } = await placed(shop);
    const first = refundOf(order, [{ sku: 'A-1', quantity: 1 }]);
    await storefront(shop, 'refunds/create', first, `refund-${first.id}`);
    // A redelivery of the same refund, then an overlapping one asking for more than is left.
    await storefront(shop, 'refunds/create', first, `refund-${first.id}`);
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 2 }]));
    const job = await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.cancellations.length === 2 && settled(j));
    expect(job.cancellations.map((c: any) => c.lines)).toEqual([[{ sku: 'A-1', quantity: 1 }], [{ sku: 'A-1', quantity: 1 }]]);
    // Nothing of A-1 is left open: a further refund of it creates no cancellation.
    const more = await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 1 }]));
    expect(more.body).toMatchObject({ syncJobIds: [] });
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, 'custom', acmeJob.sourceOrderId) as any;
    expect(supplierOrder.lines.map((line: any) => [line.sku, line.cancelledQuantity])).toEqual([['A-1', 2], ['B-1', 0]]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toHaveLength(2);
    // The rest of the order, cancelled as a whole afterwards, cancels the supplier order once.
    await storefront(shop, 'orders/cancelled', { ...order, cancelled_at: new Date().toISOString() });
    const whole = await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.cancellations.length === 3 && settled(j));
    expect(whole.cancellations[2]).toMatchObject({ outcome: 'cancelled', lines: [{ sku: 'B-1', quantity: 3 }] });
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toHaveLength(3);
  });

  it("a line whose supplier fulfillment was cancelled is still open: cancelled, not too_late", async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { order, acmeJob } = await placed(shop);
    // The supplier fulfilled the anvils, then cancelled that fulfillment: the platform shows it `cancelled`
    // (platforms.md, the Fulfillment's `status`) and the anvils unfulfilled again.
    sandbox.fulfilLines(shop.acme.shopDomain, 'platform_a', acmeJob.sourceOrderId, [{ sku: 'A-1', quantity: 2 }]);
    const shipped = sandbox.orderOf(shop.acme.shopDomain, 'platform_a', acmeJob.sourceOrderId) as any;
    sandbox.seedOrder(shop.acme.shopDomain, 'platform_a', {
      ...shipped,
      fulfillment_status: null,
      line_items: shipped.line_items.map((line: any) => ({ ...line, fulfillable_quantity: line.quantity })),
      fulfillments: shipped.fulfillments.map((fulfillment: any) => ({ ...fulfillment, status: 'cancelled' })),
    });
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 1 }]));
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'A-1', quantity: 1 }] }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ orderId: acmeJob.sourceOrderId, lines: [{ sku: 'A-1', quantity: 1 }] }]);
  });

  it('ignores refunds with other restock types', async ({ api, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { order, acmeJob } = await placed(shop);
    const response = await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 1, restock_type: 'return' }, { sku: 'B-1', quantity: 1, restock_type: 'no_restock' }]));
    expect(response.body).toEqual({ received: true, ignored: true, request_id: expect.any(String) });
    expect((await getJob(api, shop.user.token, acmeJob.id)).cancellations).toEqual([]);
  });
});

describe('some lines on other platforms', () => {
  it('custom cancels by SKU', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, acmeJob } = await placed(shop);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'B-1', quantity: 2 }] });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations).toMatchObject([{ outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'B-1', quantity: 2 }] }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ lines: [{ sku: 'B-1', quantity: 2 }] }]);
  });

  it('custom names no vendor: a SKU two suppliers sell in one order is cancelled once, from the first line of it, not from both', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const id = `ord_${nextOrderId++}`;
    const order = sandbox.buildOrderPayload('custom', { id, lines: [{ ...ANVIL, sku: 'SHARED', quantity: 1 }, { ...NUT, sku: 'SHARED', quantity: 1 }] }) as Record<string, any>;
    const ids = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const jobs = await Promise.all(ids.map((jobId) => waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed')));
    const acmeJob = jobs.find((job) => job.sourceStoreId === shop.acme.id);
    const boltJob = jobs.find((job) => job.sourceStoreId === shop.bolt.id);
    // The customer cancels one of the two: the custom cancellation names the SKU only (platforms.md).
    const response = await storefront(shop, 'orders/cancelled', { id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'SHARED', quantity: 1 }] });
    expect(response.body).toMatchObject({ received: true, syncJobIds: [acmeJob.id] });
    expect((await waitForJob(api, shop.user.token, acmeJob.id, settled)).cancellations).toMatchObject([{ outcome: 'cancelled', lines: [{ sku: 'SHARED', quantity: 1 }] }]);
    expect((await getJob(api, shop.user.token, boltJob.id)).cancellations).toEqual([]);
    expect(sandbox.cancellationsFor(shop.bolt.shopDomain)).toEqual([]);
    // The other one cancelled next: Acme has none left open, so it is Bolt's.
    const second = await storefront(shop, 'orders/cancelled', { id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'SHARED', quantity: 1 }] });
    expect(second.body).toMatchObject({ received: true, syncJobIds: [boltJob.id] });
    expect((await waitForJob(api, shop.user.token, boltJob.id, settled)).cancellations).toMatchObject([{ outcome: 'cancelled', scope: 'order' }]);
    expect((await getJob(api, shop.user.token, acmeJob.id)).cancellations).toHaveLength(1);
  });

  it('platform_b cannot cancel some lines only: unsupported, the lines named, nothing sent', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { order, acmeJob } = await placed(shop);
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'B-1', quantity: 1 }]));
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'unsupported', reason: expect.stringContaining('B-1 × 1') }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toEqual([]);
    const events = await api.get(`/v1/events?type=cancellation.unsupported&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(events.body.data).toHaveLength(1);
    // The lines to handle by hand are on the reseller's to-do list, named in its detail.
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data).toMatchObject([{ type: 'unsupported', syncJobId: acmeJob.id, subjectId: job.cancellations[0].id, status: 'open' }]);
    expect(todo.body.data[0].detail).toContain(`${job.cancellations[0].id}: ${job.cancellations[0].reason}`);
    // Another line refunded later, also unsupported: the job's one open entry names it too, not only the first.
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 1 }]));
    const again = await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.cancellations.length === 2 && settled(j));
    expect(again.cancellations[1]).toMatchObject({ outcome: 'unsupported', reason: expect.stringContaining('A-1 × 1') });
    const todoAfter = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todoAfter.body.data).toMatchObject([{ type: 'unsupported', subjectId: job.cancellations[0].id }]);
    expect(todoAfter.body.data[0].detail).toContain(`${job.cancellations[0].id}: ${job.cancellations[0].reason}`);
    expect(todoAfter.body.data[0].detail).toContain(`${again.cancellations[1].id}: ${again.cancellations[1].reason}`);
  });

  it('platform_b: lines cancelled one refund at a time until none is left cancel the whole order, and the lines to handle by hand are no longer asked', async ({ api, sandbox, service, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { order, acmeJob } = await placed(shop);
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 2 }]));
    const first = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(first.cancellations).toMatchObject([{ outcome: 'unsupported' }]);
    // The last open line: with the anvils asked before, every line the supplier holds is cancelled at the storefront.
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'B-1', quantity: 3 }]));
    const job = await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.cancellations.length === 2 && settled(j));
    expect(job.cancellations).toMatchObject([
      { outcome: 'unsupported', scope: 'lines' },
      { status: 'completed', outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'B-1', quantity: 3 }], reason: expect.stringContaining('the whole order was cancelled') },
    ]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ orderId: acmeJob.sourceOrderId, lines: null }]);
    expect((sandbox.orderOf(shop.acme.shopDomain, 'platform_b', acmeJob.sourceOrderId) as any).status).toBe('cancelled');
    // Nothing is left for the reseller to cancel by hand.
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data.filter((entry: { syncJobId: string }) => entry.syncJobId === acmeJob.id)).toEqual([]);
    // The supplier reports the order cancelled: the service asked for it, so it is not the supplier's own cancellation.
    const echoed = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'orders/updated',
      payload: sandbox.orderOf(shop.acme.shopDomain, 'platform_b', acmeJob.sourceOrderId) });
    expect(echoed.status).toBe(200);
    // And the storefront cancelling the whole order after its refunds finds nothing left open: no cancellation, no call.
    await storefront(shop, 'orders/cancelled', { ...order, cancelled_at: new Date().toISOString() });
    const after = await getJob(api, shop.user.token, acmeJob.id);
    expect(after.supplierCancelledAt ?? null).toBeNull();
    expect(after.cancellations).toHaveLength(2);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toHaveLength(1);
    const todoAfter = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todoAfter.body.data.filter((entry: { syncJobId: string }) => entry.syncJobId === acmeJob.id)).toEqual([]);
  });

  it('platform_b: the whole order cancelled for the last lines, its answer lost, is still that cancellation when the retry finds it cancelled', async ({ api, sandbox, service, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { order, acmeJob } = await placed(shop);
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 2 }]));
    expect((await waitForJob(api, shop.user.token, acmeJob.id, settled)).cancellations).toMatchObject([{ outcome: 'unsupported' }]);
    // The read (the order and its trackings) is answered; the PUT that cancels the order is carried out and its answer lost.
    sandbox.setFaults(shop.acme.shopDomain, { faultsAfter: 2, acceptThenDropNext: 1 });
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'B-1', quantity: 3 }]));
    const job = await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.cancellations.length === 2 && settled(j), 20_000);
    sandbox.clearFaults(shop.acme.shopDomain);
    expect(job.cancellations[1]).toMatchObject({ outcome: 'cancelled', attempts: 2, reason: expect.stringContaining('the whole order was cancelled') });
    // Reported back cancelled, the order is the service's doing.
    const echoed = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'orders/updated',
      payload: sandbox.orderOf(shop.acme.shopDomain, 'platform_b', acmeJob.sourceOrderId) });
    expect(echoed.status).toBe(200);
    expect((await getJob(api, shop.user.token, acmeJob.id)).supplierCancelledAt ?? null).toBeNull();
  });

  it('platform_b: the whole order cancelled for the last lines says so only once it is: failed and dead, the cancellation has no reason', async ({ api, service, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { order, acmeJob } = await placed(shop);
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 2 }]));
    expect((await waitForJob(api, shop.user.token, acmeJob.id, settled)).cancellations).toMatchObject([{ outcome: 'unsupported' }]);
    // The read (the order and its trackings) is answered; the PUT that would cancel the order, and everything after it, fails.
    sandbox.setFaults(shop.acme.shopDomain, { faultsAfter: 2, alwaysFail: true, status: 500 });
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'B-1', quantity: 3 }]));
    const dead = await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.cancellations[1]?.status === 'dead', 20_000);
    expect(dead.cancellations[1]).toMatchObject({ status: 'dead', outcome: null, reason: null });
    // The intent was kept (so a retry after a lost answer is still it): it is the presentation that holds it back.
    const [kept] = await queryRows<{ reason: string | null }>(service.databaseUrl, 'select reason from cancellations where id = $1', [dead.cancellations[1].id]);
    expect(kept!.reason).toContain('the whole order was cancelled');
    expect((sandbox.orderOf(shop.acme.shopDomain, 'platform_b', acmeJob.sourceOrderId) as any).status).not.toBe('cancelled');
    sandbox.clearFaults(shop.acme.shopDomain);
    expect((await api.post(`/v1/sync_jobs/${acmeJob.id}/cancellations/${dead.cancellations[1].id}/retry`, { token: shop.user.token })).status).toBe(200);
    const job = await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.cancellations[1]?.status === 'completed');
    expect(job.cancellations[1]).toMatchObject({ outcome: 'cancelled', reason: expect.stringContaining('the whole order was cancelled') });
  });

  it('platform_b: a refund of the last open lines while the one before is still being made cancels the whole order once', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { order, acmeJob } = await placed(shop);
    // The supplier answers slowly, so the second refund arrives while the first cancellation reads the order.
    sandbox.setFaults(shop.acme.shopDomain, { latencyMs: 1_000 });
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 2 }]));
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'B-1', quantity: 3 }]));
    const job = await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.cancellations.length === 2 && settled(j), 20_000);
    sandbox.clearFaults(shop.acme.shopDomain);
    expect(job.cancellations.map((c: { outcome: string }) => c.outcome)).toEqual(['cancelled', 'cancelled']);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ orderId: acmeJob.sourceOrderId, lines: null }]);
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data.filter((entry: { syncJobId: string }) => entry.syncJobId === acmeJob.id)).toEqual([]);
  });

  it('a partly shipped platform_a order cancelled as a whole: the unfulfilled rest is cancelled, too_late names the shipped lines', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('custom', 'platform_a');
    const { order, acmeJob } = await placed(shop);
    sandbox.fulfilLines(shop.acme.shopDomain, 'platform_a', acmeJob.sourceOrderId, [{ sku: 'A-1', quantity: 2 }]);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'too_late', scope: 'order', reason: expect.stringMatching(/shipped.*A-1 × 2.*cancelled: B-1 × 3/) });
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ lines: [{ sku: 'B-1', quantity: 3 }] }]);
  });

  it('a partly shipped custom order cancelled as a whole: its refusal names the shipped units, the rest is cancelled', async ({ api, sandbox, service, shopWith, placed, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, acmeJob } = await placed(shop);
    // Both anvils shipped; the order still shows open (custom shows no shipped quantities), and its cancel refuses them.
    sandbox.fulfilLines(shop.acme.shopDomain, 'custom', acmeJob.sourceOrderId, [{ sku: 'A-1', quantity: 2 }]);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'too_late', scope: 'order', reason: 'already shipped by the supplier: A-1 × 2; the rest was cancelled: B-1 × 3' });
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ orderId: acmeJob.sourceOrderId, lines: [{ sku: 'B-1', quantity: 3 }] }]);
    const held = sandbox.orderOf(shop.acme.shopDomain, 'custom', acmeJob.sourceOrderId) as any;
    expect(held.lines.map((line: any) => [line.sku, line.cancelledQuantity ?? 0])).toEqual([['A-1', 0], ['B-1', 3]]);
    // The supplier's webhook tells of the rest cancelled: the service asked for it, so it is not the supplier's own.
    const echoed = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'orders/cancelled',
      payload: { id: acmeJob.sourceOrderId, cancelledAt: new Date().toISOString(), lines: [{ sku: 'B-1', quantity: 3 }] } });
    expect(echoed.status).toBe(200);
    expect((await getJob(api, shop.user.token, acmeJob.id)).supplierCancelledAt ?? null).toBeNull();
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data.filter((entry: { syncJobId: string; type: string }) => entry.syncJobId === acmeJob.id).map((entry: { type: string }) => entry.type)).toEqual(['too_late']);
  });

  it('custom lines some of which shipped: the shipped units are named too late, the rest of the lines asked is cancelled', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, acmeJob } = await placed(shop);
    sandbox.fulfilLines(shop.acme.shopDomain, 'custom', acmeJob.sourceOrderId, [{ sku: 'A-1', quantity: 1 }]);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 2 }, { sku: 'B-1', quantity: 1 }] });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'too_late', scope: 'lines', reason: 'already shipped by the supplier: A-1 × 1; the rest was cancelled: A-1 × 1, B-1 × 1' });
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ lines: [{ sku: 'A-1', quantity: 1 }, { sku: 'B-1', quantity: 1 }] }]);
  });

  it('a job not placed yet, cut by some lines, is placed without them', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const id = `ord_${nextOrderId++}`;
    const order = sandbox.buildOrderPayload('custom', { id, lines: [ANVIL, BELL, NUT] });
    // The lines' cancellation comes first; the order is routed after it.
    await storefront(shop, 'orders/cancelled', { id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 2 }, { sku: 'B-1', quantity: 1 }] });
    const routed = await storefront(shop, 'orders/create', order);
    const ids = (routed.body as { syncJobIds: string[] }).syncJobIds;
    const jobs = await Promise.all(ids.map((jobId) => waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed')));
    const acmeJob = jobs.find((job) => job.sourceStoreId === shop.acme.id);
    expect(acmeJob.cancellations).toMatchObject([{ status: 'completed', outcome: 'not_placed', scope: 'lines' }]);
    const [placedOrder] = sandbox.ordersFor(shop.acme.shopDomain);
    expect((placedOrder!.body as any).lines.map((line: any) => [line.sku, line.quantity])).toEqual([['B-1', 2]]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toEqual([]);
  });

  it('a supplier whose pricing rules change the SKU is asked for its own SKU, and the cancellation names that SKU', async ({ api, sandbox, placed, storefront }) => {
    const shop = await createShop(api, 'custom', 'custom', 'custom', { pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules: [{ field: 'sku', op: 'prefix', value: 'AC-' }] } });
    const { order, acmeJob } = await placed(shop);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 1 }] });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    // "By the SKU the service placed them with" (order-changes.md): the supplier's, not the storefront's.
    expect(job.cancellations).toMatchObject([{ outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'AC-A-1', quantity: 1 }] }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ lines: [{ sku: 'AC-A-1', quantity: 1 }] }]);
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, 'custom', acmeJob.sourceOrderId) as any;
    expect(supplierOrder.lines.map((line: any) => [line.sku, line.cancelledQuantity])).toEqual([['AC-A-1', 1], ['AC-B-1', 0]]);
  });

  it("a whole-order cancellation names every line by the supplier's SKU, in its GET and in its events", async ({ api, sandbox, placed, storefront }) => {
    const shop = await createShop(api, 'custom', 'custom', 'custom', { pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules: [{ field: 'sku', op: 'prefix', value: 'AC-' }] } });
    const { order, acmeJob } = await placed(shop);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    const named = [{ sku: 'AC-A-1', quantity: 2 }, { sku: 'AC-B-1', quantity: 3 }];
    expect(job.cancellations).toMatchObject([{ outcome: 'cancelled', scope: 'order', lines: named }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ orderId: acmeJob.sourceOrderId }]);
    const events = await api.get('/v1/events?type=cancellation.completed', { token: shop.user.token });
    expect(events.status, JSON.stringify(events.body)).toBe(200);
    const completed = events.body.data.find((event: any) => event.data.object.id === acmeJob.id);
    expect(completed?.data.object.cancellations).toMatchObject([{ scope: 'order', lines: named }]);
  });

  it('a line placed before the supplier had SKU rules is named, and cancelled, by the SKU it was placed with', async ({ api, sandbox, placed, storefront }) => {
    const shop = await createShop(api, 'platform_a', 'platform_a', 'custom');
    const { order, acmeJob } = await placed(shop);
    // Rules added after the order was placed: the supplier holds the storefront's SKUs.
    const changed = await api.patch(`/v1/reseller_stores/${shop.reseller.id}/source_stores/${shop.acme.id}`, {
      token: shop.user.token,
      body: { pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules: [{ field: 'sku', op: 'prefix', value: 'AC-' }] } },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 1 }]));
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations).toMatchObject([{ outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'A-1', quantity: 1 }] }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toHaveLength(1);
  });

  it('a line the supplier order does not have is never reported cancelled: unsupported, on the to-do list', async ({ api, sandbox, placed, storefront }) => {
    const shop = await createShop(api, 'custom', 'custom', 'custom', { pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules: [{ field: 'sku', op: 'prefix', value: 'AC-' }] } });
    const { order, acmeJob } = await placed(shop);
    // The supplier's SKU rules changed after the order was placed: the SKU it has is not the one they make now.
    const changed = await api.patch(`/v1/reseller_stores/${shop.reseller.id}/source_stores/${shop.acme.id}`, {
      token: shop.user.token,
      body: { pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules: [{ field: 'sku', op: 'prefix', value: 'NEW-' }] } },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 1 }] });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations).toMatchObject([{ outcome: 'unsupported', reason: expect.stringContaining('A-1 × 1') }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toEqual([]);
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data).toMatchObject([{ type: 'unsupported', syncJobId: acmeJob.id }]);
  });
});

describe('lines as the supplier order holds them', () => {
  it('cancels the whole asked quantity when the supplier order has two lines of the SKU', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'platform_a');
    const lines = [
      { sku: 'DUP', title: 'Mug (plain)', vendor: 'Acme', quantity: 1, price: '10.00' },
      { sku: 'DUP', title: 'Mug (engraved)', vendor: 'Acme', quantity: 2, price: '12.00' },
    ];
    const order = sandbox.buildOrderPayload('custom', { id: `ord_${nextOrderId++}`, lines }) as Record<string, any>;
    const ids = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const acmeJob = await waitForJob(api, shop.user.token, ids[0]!, (j) => j.status === 'completed');
    // Two of the three mugs cancelled: one of each supplier line, or both of one; one mug left to ship.
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'DUP', quantity: 2 }] });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'DUP', quantity: 2 }] }]);
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, 'platform_a', acmeJob.sourceOrderId) as any;
    expect(supplierOrder.line_items.reduce((sum: number, line: any) => sum + (line.fulfillable_quantity ?? line.quantity), 0)).toBe(1);
  });

  it('platform_b: a line cancelled after its supplier shipped the order is too_late, not unsupported', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { order, acmeJob } = await placed(shop);
    sandbox.fulfilLines(shop.acme.shopDomain, 'platform_b', acmeJob.sourceOrderId);
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'B-1', quantity: 1 }]));
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations[0]).toMatchObject({ outcome: 'too_late', reason: expect.stringContaining('shipped') });
  });

  it('platform_b: a line of an order its supplier already cancelled is cancelled, with nothing on the to-do list', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { order, acmeJob } = await placed(shop);
    sandbox.cancelOrder(shop.acme.shopDomain, 'platform_b', acmeJob.sourceOrderId);
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'B-1', quantity: 1 }]));
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations[0]).toMatchObject({ outcome: 'cancelled' });
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data).toEqual([]);
  });
});

describe('a cancellation with a long reason', () => {
  it("is acted on, on the storefront: refusing it would lose the customer's cancellation", async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const order = sandbox.buildOrderPayload('custom', { id: `ord_${nextOrderId++}`, lines: [ANVIL, BELL] }) as Record<string, any>;
    const ids = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const placed = await waitForJob(api, shop.user.token, ids[0]!, (j) => j.status === 'completed');
    const reason = `Customer wrote: ${'the bell arrived broken last time, please do not send another one. '.repeat(10)}`;
    const response = await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), reason, lines: [{ sku: 'B-1', quantity: 1 }] });
    expect({ status: response.status, body: response.body }).toMatchObject({ status: 200, body: { received: true, syncJobIds: [placed.id] } });
    const job = await waitForJob(api, shop.user.token, placed.id, settled);
    expect(job.cancellations).toMatchObject([{ outcome: 'cancelled', lines: [{ sku: 'B-1', quantity: 1 }] }]);
  });

  it("is recorded from a custom supplier, its reason cut to 500 characters, as the divergence watch records it", async ({ api, service, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const order = sandbox.buildOrderPayload('custom', { id: `ord_${nextOrderId++}`, lines: [ANVIL] }) as Record<string, any>;
    const ids = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const placed = await waitForJob(api, shop.user.token, ids[0]!, (j) => j.status === 'completed');
    const reason = `Out of stock: ${'our warehouse in Leeds flooded and every anvil in stock was damaged. '.repeat(10)}`;
    const response = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'orders/cancelled',
      payload: { id: placed.sourceOrderId, cancelledAt: new Date().toISOString(), reason } });
    expect(response.status).toBe(200);
    const job = await getJob(api, shop.user.token, placed.id);
    expect(job.supplierCancelledAt).toEqual(expect.any(String));
    expect([...job.supplierCancelReason]).toHaveLength(500);
    expect(job.supplierCancelReason.startsWith('Out of stock: our warehouse in Leeds flooded')).toBe(true);
  });
});

describe('two dead cancellations of one job', () => {
  it("keep the job's cancellation_dead entry open, naming the one still dead, when the other's retry completes", async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, acmeJob } = await placed(shop);
    const token = shop.user.token;
    const allDead = (n: number) => (j: any) => j.cancellations.length === n && j.cancellations.every((c: any) => c.status === 'dead');
    // Acme is down for cancellations: the customer cancels the anvils, then the bells; both die.
    sandbox.setFaults(shop.acme.shopDomain, { cancelFailNext: 8, cancelStatus: 503 });
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: ANVIL.sku, quantity: ANVIL.quantity }] });
    await waitForJob(api, token, acmeJob.id, allDead(1), 20_000);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: BELL.sku, quantity: BELL.quantity }] });
    const [first, second] = (await waitForJob(api, token, acmeJob.id, allDead(2), 20_000)).cancellations;
    const todo = async () => ((await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token })).body.data as any[]).map((entry) => [entry.type, entry.subjectId]);
    // One entry per job and type (order-changes.md).
    expect(await todo()).toEqual([['cancellation_dead', first.id]]);
    sandbox.clearFaults(shop.acme.shopDomain);
    expect((await api.post(`/v1/sync_jobs/${acmeJob.id}/cancellations/${first.id}/retry`, { token })).status).toBe(200);
    const after = await waitForJob(api, token, acmeJob.id, (j) => j.cancellations[0].status === 'completed', 20_000);
    expect(after.cancellations[1]).toMatchObject({ id: second.id, status: 'dead' });
    // The bells are still open at the supplier: the entry now names the cancellation still dead.
    expect(await todo()).toEqual([['cancellation_dead', second.id]]);
    expect((await api.post(`/v1/sync_jobs/${acmeJob.id}/cancellations/${second.id}/retry`, { token })).status).toBe(200);
    await waitForJob(api, token, acmeJob.id, (j) => j.cancellations.every((c: any) => c.status === 'completed'), 20_000);
    expect(await todo()).toEqual([]);
  });
});

describe('lines cut from a job not placed', () => {
  it("cuts the cancelled quantity from the job's own supplier's line, not from another supplier's line with the same SKU", async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('platform_a', 'custom', 'custom');
    const order = sandbox.buildOrderPayload('platform_a', {
      id: nextOrderId++,
      lines: [
        { sku: 'WIDGET', title: 'Bolt widget', vendor: 'Bolt', quantity: 2, price: '4.00' },
        { sku: 'WIDGET', title: 'Acme widget', vendor: 'Acme', quantity: 3, price: '10.00' },
      ],
    }) as Record<string, any>;
    // One Acme widget refunded (restock_type cancel, naming the Acme line) before orders/create arrives.
    const acmeLine = order.line_items[1];
    const refund = { id: nextRefundId++, order_id: order.id, created_at: new Date().toISOString(), note: null, transactions: [],
      refund_line_items: [{ id: nextRefundId++, line_item_id: acmeLine.id, quantity: 1, restock_type: 'cancel', line_item: acmeLine }] };
    expect((await storefront(shop, 'refunds/create', refund)).status).toBe(200);
    const routed = await storefront(shop, 'orders/create', order);
    const jobs = await Promise.all((routed.body as { syncJobIds: string[] }).syncJobIds.map((id) => waitForJob(api, shop.user.token, id, (job) => job.status === 'completed')));
    const acmeJob = jobs.find((job) => job.sourceStoreId === shop.acme.id);
    expect(acmeJob.cancellations).toMatchObject([{ status: 'completed', outcome: 'not_placed', scope: 'lines', lines: [{ sku: 'WIDGET', quantity: 1 }] }]);
    expect(sandbox.ordersFor(shop.acme.shopDomain).map((placed) => (placed.body as any).lines)).toMatchObject([[{ sku: 'WIDGET', quantity: 2 }]]);
    expect(sandbox.ordersFor(shop.bolt.shopDomain).map((placed) => (placed.body as any).lines)).toMatchObject([[{ sku: 'WIDGET', quantity: 2 }]]);
  });

  it('a cut made by its attempt holds no quantity twice: a second signal for the same line cuts it too', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const id = `ord_${nextOrderId++}`;
    const order = sandbox.buildOrderPayload('custom', { id, lines: [ANVIL, BELL] });
    sandbox.setFaults(shop.acme.shopDomain, { alwaysFail: true, status: 422 });
    const jobId = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds[0]!;
    await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'dead', 20_000);
    sandbox.clearFaults(shop.acme.shopDomain);
    // Each signal's attempt finds no supplier order and cuts the line from the stored order.
    await storefront(shop, 'orders/cancelled', { id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 1 }] }, `cut-1-${id}`);
    await waitForJob(api, shop.user.token, jobId, settled);
    const second = await storefront(shop, 'orders/cancelled', { id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 1 }] }, `cut-2-${id}`);
    expect((second.body as { syncJobIds: string[] }).syncJobIds).toEqual([jobId]);
    const cut = await waitForJob(api, shop.user.token, jobId, (j) => j.cancellations.length === 2 && settled(j));
    expect(cut.cancellations.map((c: any) => c.outcome)).toEqual(['not_placed', 'not_placed']);
    expect((await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token })).status).toBe(200);
    await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed');
    const [placedOrder] = sandbox.ordersFor(shop.acme.shopDomain);
    expect((placedOrder!.body as any).lines.map((line: any) => [line.sku, line.quantity])).toEqual([['B-1', 3]]);
  });

  it('cut line by line to nothing before its order is routed: the job ends without an order, never dead', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const id = `ord_${nextOrderId++}`;
    const order = sandbox.buildOrderPayload('custom', { id, lines: [ANVIL, BELL, NUT] });
    await storefront(shop, 'orders/cancelled', { id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 2 }] }, `all-1-${id}`);
    await storefront(shop, 'orders/cancelled', { id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'B-1', quantity: 3 }] }, `all-2-${id}`);
    const ids = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const jobs = await Promise.all(ids.map((jobId) => waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed' || j.status === 'dead', 20_000)));
    const acmeJob = jobs.find((job) => job.sourceStoreId === shop.acme.id);
    expect(acmeJob).toMatchObject({ status: 'completed', sourceOrderId: null });
    expect(acmeJob.cancellations.map((c: any) => c.scope)).toEqual(['lines', 'order']);
    expect(sandbox.ordersFor(shop.acme.shopDomain)).toEqual([]);
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data).toEqual([]);
  });

  it('shipping the lines left after a cut is no news: the cut stays not_placed', async ({ api, sandbox, service, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const id = `ord_${nextOrderId++}`;
    const order = sandbox.buildOrderPayload('custom', { id, lines: [ANVIL, BELL, NUT] });
    await storefront(shop, 'orders/cancelled', { id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 2 }] });
    const ids = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const jobs = await Promise.all(ids.map((jobId) => waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed')));
    const acmeJob = jobs.find((job) => job.sourceStoreId === shop.acme.id);
    const fulfillment = buildFulfillmentPayload('custom', { orderId: acmeJob.sourceOrderId, trackingNumbers: ['TRK-BELLS'] });
    const sent = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'fulfillments/create', payload: fulfillment });
    expect(sent.status).toBe(200);
    const job = await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.fulfillments.length === 1);
    expect(job.cancellations).toMatchObject([{ outcome: 'not_placed' }]);
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data.filter((entry: { type: string }) => entry.type === 'too_late')).toEqual([]);
  });

  it("after a line cancellation, the supplier's own cancellation of the whole order is still recorded", async ({ api, sandbox, service, shopWith, placed, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, acmeJob } = await placed(shop);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 1 }] });
    await waitForJob(api, shop.user.token, acmeJob.id, settled);
    sandbox.cancelOrder(shop.acme.shopDomain, 'custom', acmeJob.sourceOrderId);
    const sent = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'orders/cancelled', payload: { id: acmeJob.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'out of stock' } });
    expect(sent.status).toBe(200);
    expect((await getJob(api, shop.user.token, acmeJob.id)).supplierCancelledAt).toEqual(expect.any(String));
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data).toMatchObject([{ type: 'supplier_cancelled', syncJobId: acmeJob.id }]);
  });

  it('a supplier reporting back what the service cancelled changes nothing: its lines, or the whole order once every line was cancelled one signal at a time', async ({ api, service, shopWith, placed, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, acmeJob } = await placed(shop);
    const supplierReports = (payload: Record<string, unknown>) =>
      sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'orders/cancelled', payload: { id: acmeJob.sourceOrderId, cancelledAt: new Date().toISOString(), ...payload } });
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 2 }] });
    await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect((await supplierReports({ lines: [{ sku: 'A-1', quantity: 2 }] })).status).toBe(200);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'B-1', quantity: 3 }] });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.cancellations.length === 2 && settled(j));
    expect(job.cancellations).toMatchObject([{ scope: 'lines', outcome: 'cancelled' }, { scope: 'lines', outcome: 'cancelled' }]);
    // Nothing is left in the supplier order, which the supplier then closes.
    expect((await supplierReports({})).status).toBe(200);
    expect((await getJob(api, shop.user.token, acmeJob.id)).supplierCancelledAt).toBeNull();
    expect((await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data).toEqual([]);
    // A line the service never asked for is the supplier's own.
    expect((await supplierReports({ lines: [{ sku: 'B-1', quantity: 4 }] })).status).toBe(200);
    expect((await getJob(api, shop.user.token, acmeJob.id)).supplierCancelledAt).toEqual(expect.any(String));
  });

  it('a supplier reporting back the lines the service cancelled under the SKUs its pricing made changes nothing', async ({ api, service, sandbox, storefront }) => {
    const shop = await createShop(api, 'custom', 'custom', 'custom', { pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules: [{ field: 'sku', op: 'prefix', value: 'AC-' }] } });
    const order = sandbox.buildOrderPayload('custom', { id: `ord_${nextOrderId++}`, lines: [ANVIL, BELL, NUT] }) as Record<string, any>;
    const ids = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const jobs = await Promise.all(ids.map((jobId) => waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed')));
    const acmeJob = jobs.find((job) => job.sourceStoreId === shop.acme.id);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 2 }] });
    expect((await waitForJob(api, shop.user.token, acmeJob.id, settled)).cancellations).toMatchObject([{ scope: 'lines', outcome: 'cancelled' }]);
    const report = await sendWebhook({
      targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
      shopDomain: shop.acme.shopDomain,
      secret: shop.acme.secret,
      topic: 'orders/cancelled',
      payload: { id: acmeJob.sourceOrderId, cancelledAt: new Date().toISOString(), lines: [{ sku: 'AC-A-1', quantity: 2 }] },
    });
    expect(report.status).toBe(200);
    expect((await getJob(api, shop.user.token, acmeJob.id)).supplierCancelledAt).toBeNull();
    expect((await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data).toEqual([]);
  });
});
