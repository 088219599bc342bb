/**
 * Cancellations end to end (issue 23), beyond test/cancellations.test.ts: a refund names the
 * supplier's own line ids kept from the create answer (not those of a later read), a job without
 * kept lines keeps those its cancellation read, a platform_b storefront's `refunded` order cancels its
 * jobs at every supplier, a placement in doubt that is then cut by some lines is looked up by its
 * reference (never created twice), and the `sync_job.*` events carry the job's real cancellations.
 * Real service, HTTP, queue, database and sandbox.
 */
import { describe, expect } from 'vitest';
import { jobEventsIn } from '../src/cancellations/events.ts';
import { connectOrm } from '../src/database.ts';
import { sqlOf } from '../src/db/sql.ts';
import type { Platform } from '../src/orders/types.ts';
import { buildFulfillmentPayload, sendWebhook, type OrderLineInput } from './sandbox/server.ts';
import type { Faults } from './sandbox/state.ts';
import { queryRows } from './support/database.ts';
import { finishedRun, jobsByOrder, openReseller, placeOrders, reconcile } from './support/reconciliation.ts';
import { test } from './support/fixtures.ts';
import { ANVIL, BELL, NUT, createShop, sendStorefrontWebhook, settled, type Shop } from './support/cancellations.ts';
import { auditOf, createJob, getJob, waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH } from './support/webhooks.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500', RECONCILE_INTERVAL_MS: '0', RECONCILE_GRACE_MS: '0' });

let nextOrderId = 2_330_000 + Math.floor(Math.random() * 10_000) * 10;
let nextRefundId = 88_000;

const it = test
  .extend('shopWith', { scope: 'file' }, ({ api }) => (resellerPlatform: Platform, acmePlatform: Platform, boltPlatform?: Platform) => createShop(api, resellerPlatform, acmePlatform, boltPlatform))
  .extend('storefront', { scope: 'file' }, ({ service }) => (shop: Shop, topic: string, payload: unknown) => sendStorefrontWebhook(service.url, shop, topic, payload))
  /** Sends the order's orders/create webhook; returns the order and its jobs' ids (Acme's, then Bolt's when it has lines). */
  .extend('route', { scope: 'file' }, ({ sandbox, storefront }) => async (shop: Shop, lines: OrderLineInput[]) => {
    const id = shop.reseller.platform === 'custom' ? `ord_${nextOrderId++}` : nextOrderId++;
    const order = sandbox.buildOrderPayload(shop.reseller.platform, { id, lines }) as Record<string, any>;
    sandbox.seedOrder(shop.reseller.shopDomain, shop.reseller.platform, order);
    const response = await storefront(shop, 'orders/create', order);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return { order, jobIds: (response.body as { syncJobIds: string[] }).syncJobIds };
  })
  /** Routes an order and waits until every job of it is placed. */
  .extend('placed', { scope: 'file' }, ({ api, route }) => async (shop: Shop, lines: OrderLineInput[] = [ANVIL, BELL, NUT]) => {
    const { order, jobIds } = await route(shop, lines);
    const jobs = await Promise.all(jobIds.map((jobId) => waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed')));
    return { order, acmeJob: jobs.find((job) => job.sourceStoreId === shop.acme.id), boltJob: jobs.find((job) => job.sourceStoreId === shop.bolt.id) };
  })
  /** Routes an order while Acme has these faults, waits until Acme's job is dead, then clears them; returns the order and that job's id. */
  .extend('routedToDeath', { scope: 'file' }, ({ api, sandbox, route }) => async (shop: Shop, lines: OrderLineInput[], faults: Faults) => {
    sandbox.setFaults(shop.acme.shopDomain, faults);
    const { order, jobIds } = await route(shop, lines);
    const jobId = jobIds[0]!;
    await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'dead', 20_000);
    sandbox.clearFaults(shop.acme.shopDomain);
    return { order, jobId };
  });

/** A platform_a refund of these reseller lines with restock_type cancel, as its refunds/create webhook carries it. */
function refundOf(order: Record<string, any>, lines: { sku: string; quantity: number }[]) {
  return {
    id: nextRefundId++,
    order_id: order.id,
    created_at: new Date().toISOString(),
    note: null,
    refund_line_items: lines.map(({ sku, quantity }) => {
      const lineItem = order.line_items.find((item: any) => item.sku === sku);
      return { id: nextRefundId++, line_item_id: lineItem.id, quantity, restock_type: 'cancel', line_item: lineItem };
    }),
    transactions: [],
  };
}

/** The supplier lines a job keeps (`sync_jobs.supplier_lines`). */
async function keptLines(databaseUrl: string, jobId: string): Promise<unknown> {
  const [row] = await queryRows<{ supplier_lines: unknown }>(databaseUrl, 'select supplier_lines from sync_jobs where id = $1', [jobId]);
  return row!.supplier_lines;
}

/** A platform_a supplier order's lines as the sandbox holds them: [id, sku, quantity, fulfillable quantity]. */
const linesOf = (order: any) => order.line_items.map((line: any) => [line.id, line.sku, line.quantity, line.fulfillable_quantity]);

/** The `data.object` of a job's events of one type, oldest first. */
async function eventObjects(api: any, token: string, resellerStoreId: string, type: string, jobId: string): Promise<any[]> {
  const events = await api.get(`/v1/events?type=${type}&reseller_store_id=${resellerStoreId}`, { token });
  expect(events.status).toBe(200);
  return events.body.data.filter((event: any) => event.data.object.id === jobId).map((event: any) => event.data.object).reverse();
}

describe('the supplier line ids kept from the create answer', () => {
  it('are kept with the job when it is placed, and a refund names them, whatever a later read of the order says', async ({ api, sandbox, service, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { order, acmeJob } = await placed(shop);
    const created = sandbox.orderOf(shop.acme.shopDomain, 'platform_a', acmeJob.sourceOrderId) as any;
    expect(await keptLines(service.databaseUrl, acmeJob.id)).toEqual(created.line_items.map((line: any) => ({ lineId: String(line.id), sku: line.sku, quantity: line.quantity })));
    // From now on the supplier's reads of the order give other line ids; its refunds take only its own.
    sandbox.setFaults(shop.acme.shopDomain, { lineIdsOnReadOffset: 1_000 });
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 1 }]));
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'A-1', quantity: 1 }], attempts: 1 }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ orderId: acmeJob.sourceOrderId, lines: [{ sku: 'A-1', quantity: 1 }] }]);
    const [anvil, bell] = created.line_items;
    expect(linesOf(sandbox.orderOf(shop.acme.shopDomain, 'platform_a', acmeJob.sourceOrderId))).toEqual([
      [anvil.id, 'A-1', 2, 1],
      [bell.id, 'B-1', 3, 3],
    ]);
  });

  it('name the unshipped rest of a partly shipped order cancelled as a whole, whatever a later read says', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { order, acmeJob } = await placed(shop);
    sandbox.fulfilLines(shop.acme.shopDomain, 'platform_a', acmeJob.sourceOrderId, [{ sku: 'A-1', quantity: 2 }]);
    sandbox.setFaults(shop.acme.shopDomain, { lineIdsOnReadOffset: 1_000 });
    await storefront(shop, 'orders/cancelled', { ...order, cancelled_at: new Date().toISOString() });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'too_late', reason: expect.stringMatching(/shipped.*A-1 × 2.*cancelled: B-1 × 3/) });
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ lines: [{ sku: 'B-1', quantity: 3 }] }]);
  });

  it('a job that kept none (placed before they were kept) cancels by the ids it reads, and keeps them', async ({ api, sandbox, service, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { order, acmeJob } = await placed(shop);
    await queryRows(service.databaseUrl, 'update sync_jobs set supplier_lines = null where id = $1', [acmeJob.id]);
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'B-1', quantity: 2 }]));
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', lines: [{ sku: 'B-1', quantity: 2 }] }]);
    const held = sandbox.orderOf(shop.acme.shopDomain, 'platform_a', acmeJob.sourceOrderId) as any;
    expect(linesOf(held).map((line: unknown[]) => line[3])).toEqual([2, 1]);
    expect(await keptLines(service.databaseUrl, acmeJob.id)).toEqual(held.line_items.map((line: any) => ({ lineId: String(line.id), sku: line.sku, quantity: line.quantity })));
  });

  it('are not kept from custom (its answer gives no line ids): custom cancels by SKU', async ({ api, sandbox, service, shopWith, placed, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, acmeJob } = await placed(shop);
    expect(await keptLines(service.databaseUrl, acmeJob.id)).toBeNull();
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 1 }] });
    const job = await waitForJob(api, shop.user.token, acmeJob.id, settled);
    expect(job.cancellations).toMatchObject([{ outcome: 'cancelled', lines: [{ sku: 'A-1', quantity: 1 }] }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ lines: [{ sku: 'A-1', quantity: 1 }] }]);
    // Nor from custom's read of the order: its lines have no ids to keep.
    expect(await keptLines(service.databaseUrl, acmeJob.id)).toBeNull();
  });
});

describe("a platform_b storefront's order refunded", () => {
  it('cancels every routed job at its supplier (orders/updated with status refunded)', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_b', 'platform_a', 'custom');
    const { order, acmeJob, boltJob } = await placed(shop);
    const response = await storefront(shop, 'orders/updated', { ...order, status: 'refunded' });
    expect(response.status).toBe(200);
    expect((response.body as { syncJobIds: string[] }).syncJobIds.sort()).toEqual([acmeJob.id, boltJob.id].sort());
    for (const [job, supplier, lines] of [
      [acmeJob, shop.acme, [{ sku: 'A-1', quantity: 2 }, { sku: 'B-1', quantity: 3 }]],
      [boltJob, shop.bolt, [{ sku: 'N-1', quantity: 4 }]],
    ] as const) {
      const cancelled = await waitForJob(api, shop.user.token, job.id, settled);
      expect(cancelled.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', scope: 'order', lines }]);
      expect(sandbox.cancellationsFor(supplier.shopDomain)).toMatchObject([{ orderId: job.sourceOrderId, lines: null }]);
    }
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, 'platform_a', acmeJob.sourceOrderId) as any;
    expect(supplierOrder.cancelled_at).toEqual(expect.any(String));
    expect((sandbox.orderOf(shop.bolt.shopDomain, 'custom', boltJob.sourceOrderId) as any).status).toBe('cancelled');
  });
});

describe('a placement in doubt, then cut by some lines', () => {
  it('is looked up by the reference the service attached, never created twice, and those lines are cancelled on it', async ({ routedToDeath, api, sandbox, service, shopWith, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    // Every answer lost: the supplier holds the order, the job never learns it and dies.
    const { order, jobId } = await routedToDeath(shop, [ANVIL, BELL], { acceptThenDropNext: 4 });
    const [held] = sandbox.ordersFor(shop.acme.shopDomain);
    expect(sandbox.ordersFor(shop.acme.shopDomain)).toHaveLength(1);
    const heldId = String(held!.id);
    await storefront(shop, 'refunds/create', refundOf(order, [{ sku: 'A-1', quantity: 2 }]));
    const cut = await waitForJob(api, shop.user.token, jobId, settled);
    expect(cut.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'A-1', quantity: 2 }] }]);
    // Found among the orders created since the job was, by its reference; nothing was posted again.
    const requests = sandbox.requestsFor(shop.acme.shopDomain);
    expect(requests.some((request) => request.method === 'GET' && request.path.startsWith('/admin/api/2025-01/orders.json?') && request.path.includes('created_at_min='))).toBe(true);
    expect(sandbox.ordersFor(shop.acme.shopDomain)).toHaveLength(1);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ orderId: heldId, lines: [{ sku: 'A-1', quantity: 2 }] }]);
    const heldNow = sandbox.orderOf(shop.acme.shopDomain, 'platform_a', heldId) as any;
    expect(linesOf(heldNow).map((line: unknown[]) => [line[1], line[3]])).toEqual([['A-1', 0], ['B-1', 3]]);
    // The job keeps the lines its cancellation read (its create answer never arrived).
    const read = heldNow.line_items.map((line: any) => ({ lineId: String(line.id), sku: line.sku, quantity: line.quantity }));
    expect(await keptLines(service.databaseUrl, jobId)).toEqual(read);
    // Retried by hand, the job gets that same order back (its idempotency key), never a second one.
    expect((await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token })).status).toBe(200);
    const job = await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed');
    expect(job.sourceOrderId).toBe(heldId);
    expect(sandbox.ordersFor(shop.acme.shopDomain)).toHaveLength(1);
    expect(await keptLines(service.databaseUrl, jobId)).toEqual(read);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toHaveLength(1);
  });

  it('found nowhere (refused, so never created): the job is cut, and placed without those lines when retried', async ({ routedToDeath, api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, jobId } = await routedToDeath(shop, [ANVIL, BELL], { alwaysFail: true, status: 422 });
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 2 }, { sku: 'B-1', quantity: 1 }] });
    const cut = await waitForJob(api, shop.user.token, jobId, settled);
    expect(cut.cancellations).toMatchObject([{ status: 'completed', outcome: 'not_placed', scope: 'lines', reason: expect.stringContaining('placed without these lines') }]);
    expect(cut.status).toBe('dead');
    expect((await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token })).status).toBe(200);
    await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed');
    const [placedOrder] = sandbox.ordersFor(shop.acme.shopDomain);
    expect((placedOrder!.body as any).lines.map((line: any) => [line.sku, line.quantity])).toEqual([['B-1', 2]]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toEqual([]);
  });
});

describe('a placement in doubt, then cancelled as a whole', () => {
  for (const supplierPlatform of ['platform_a', 'platform_b'] as const) {
    it(`is found by its reference among ${supplierPlatform}'s orders, never created again, and cancelled`, async ({ routedToDeath, api, sandbox, shopWith, storefront }) => {
      const shop = await shopWith('custom', supplierPlatform);
      const { order, jobId } = await routedToDeath(shop, [ANVIL], { acceptThenDropNext: 4 });
      const [held] = sandbox.ordersFor(shop.acme.shopDomain);
      await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
      const job = await waitForJob(api, shop.user.token, jobId, settled);
      // The order it found is the job's: a fulfillment of it (shipped anyway) finds the job.
      expect(job).toMatchObject({ status: 'completed', sourceOrderId: String(held!.id) });
      expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', scope: 'order' }]);
      expect(sandbox.ordersFor(shop.acme.shopDomain)).toHaveLength(1);
      expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ orderId: String(held!.id), lines: null }]);
    });
  }
});

describe('a cancellation recorded before its order, which reconciliation routes', () => {
  it('ends the order\'s job not placed: nothing reaches the supplier', async ({ api, sandbox, service }) => {
    const reseller = await openReseller(sandbox, { api, url: service.url, databaseUrl: service.databaseUrl }, 'custom');
    // The customer's order, whose orders/create webhook is lost; its cancellation webhook arrives.
    const [order] = await placeOrders(sandbox, reseller, 1, 'drop');
    const cancelled = await sendWebhook({
      targetUrl: `${service.url}${ORDERS_PATH}`,
      shopDomain: reseller.store.shopDomain,
      secret: reseller.secret,
      topic: 'orders/cancelled',
      payload: { id: order!.id, cancelledAt: new Date().toISOString() },
    });
    expect(cancelled.body).toMatchObject({ received: true, syncJobIds: [] });
    // The storefront's list does not show it cancelled yet: reconciliation routes it.
    const run = await finishedRun(reseller, await reconcile(reseller));
    expect(run).toMatchObject({ status: 'succeeded', ordersRouted: 1 });
    const [jobId] = (await jobsByOrder(reseller)).get(String(order!.id))!;
    const job = await waitForJob(api, reseller.user.token, jobId!, settled);
    expect(job).toMatchObject({ status: 'completed', sourceOrderId: null, attempts: 0 });
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'not_placed', scope: 'order' }]);
    expect(sandbox.ordersFor(reseller.supplier.shopDomain)).toEqual([]);
  });
});

describe('a cancellation recorded before its order, whose job an operator creates by hand', () => {
  it('ends the manual job not placed: a cancelled order reaches no supplier, whoever creates its job', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('platform_a', 'custom');
    const id = 8_800_000 + Math.floor(Math.random() * 100_000);
    const order = sandbox.buildOrderPayload('platform_a', { id, lines: [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 2, price: '25.00' }], cancelled: true });
    sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', order);
    // Its orders/cancelled reached the service; its orders/create never did.
    expect((await storefront(shop, 'orders/cancelled', order)).body).toMatchObject({ received: true, syncJobIds: [] });
    const job = await createJob(api, shop.user.token, shop.acme.id, String(id));
    const done = await waitForJob(api, shop.user.token, job.id, settled);
    expect(done).toMatchObject({ status: 'completed', sourceOrderId: null, attempts: 0 });
    expect(done.cancellations).toMatchObject([{ status: 'completed', outcome: 'not_placed', scope: 'order' }]);
    expect(sandbox.ordersFor(shop.acme.shopDomain)).toEqual([]);
  });
});

describe('sync_job events', () => {
  it("of an order's cancellations, written together, each carry their own job and only its cancellation", async ({ api, service, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b', 'custom');
    const { order, acmeJob, boltJob } = await placed(shop);
    await storefront(shop, 'orders/cancelled', { ...order, cancelled_at: new Date().toISOString() });
    const written = [];
    for (const placedJob of [acmeJob, boltJob]) {
      const job = await waitForJob(api, shop.user.token, placedJob.id, settled);
      expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', scope: 'order' }]);
      const [completed] = await eventObjects(api, shop.user.token, shop.reseller.id, 'cancellation.completed', placedJob.id);
      expect(completed).toMatchObject({ id: placedJob.id, sourceStoreId: placedJob.sourceStoreId, sourceOrderId: placedJob.sourceOrderId, fulfillments: [] });
      expect(completed.cancellations).toEqual(job.cancellations);
      written.push(completed);
    }
    // Built together (as an outcome group's are), in the order asked, a job gone left out.
    const orm = await connectOrm(service.databaseUrl, 1);
    try {
      const asked = [acmeJob.id, 'job_gone', boltJob.id, acmeJob.id].map((syncJobId) => ({ type: 'cancellation.completed' as const, syncJobId }));
      const events = await sqlOf(orm).transaction().execute((trx) => jobEventsIn(trx, asked));
      expect(JSON.parse(JSON.stringify(events.map((event) => event.object)))).toEqual([written[0], written[1], written[0]]);
    } finally {
      await orm.close();
    }
  });

  it('carry the job\'s real cancellations, as the transaction that wrote them saw them', async ({ routedToDeath, api, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, jobId } = await routedToDeath(shop, [ANVIL, BELL], { alwaysFail: true, status: 422 });
    // Before any cancellation, the job's events show none.
    const [dead] = await eventObjects(api, shop.user.token, shop.reseller.id, 'sync_job.dead', jobId);
    expect(dead.cancellations).toEqual([]);
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'A-1', quantity: 2 }] });
    const cut = await waitForJob(api, shop.user.token, jobId, settled);
    const cancellation = { id: cut.cancellations[0].id, status: 'completed', outcome: 'not_placed', scope: 'lines', lines: [{ sku: 'A-1', quantity: 2 }] };
    // A manual retry, one of a bulk retry's, and the completion that follows: each shows it.
    expect((await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token })).status).toBe(200);
    const completed = await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed');
    const [retried] = await eventObjects(api, shop.user.token, shop.reseller.id, 'sync_job.retried', jobId);
    expect(retried).toMatchObject({ status: 'pending', cancellations: [expect.objectContaining(cancellation)] });
    const [completedEvent] = await eventObjects(api, shop.user.token, shop.reseller.id, 'sync_job.completed', jobId);
    expect(completedEvent).toMatchObject({ status: 'completed', cancellations: [expect.objectContaining(cancellation)] });
    expect(completedEvent.cancellations).toEqual(completed.cancellations);
  });

  it('of a bulk retry carry them too', async ({ routedToDeath, api, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, jobId } = await routedToDeath(shop, [ANVIL, BELL], { alwaysFail: true, status: 422 });
    await storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'B-1', quantity: 1 }] });
    const cut = await waitForJob(api, shop.user.token, jobId, settled);
    const bulk = await api.post('/v1/sync_jobs/bulk_retry', { token: shop.user.token, body: { reseller_store_id: shop.reseller.id, status: 'dead' } });
    expect(bulk.status, JSON.stringify(bulk.body)).toBeLessThan(300);
    const [retried] = await waitForEvent(api, shop.user.token, shop.reseller.id, 'sync_job.retried', jobId);
    expect(retried.cancellations).toMatchObject([{ id: cut.cancellations[0].id, outcome: 'not_placed', lines: [{ sku: 'B-1', quantity: 1 }] }]);
    expect((await getJob(api, shop.user.token, jobId)).cancellations).toHaveLength(1);
  });
});

describe('a fulfillment for a cancelled part', () => {
  for (const supplierPlatform of ['platform_b', 'custom'] as const) {
    it(`from a ${supplierPlatform} supplier is still recorded and pushed, and raises cancellation.too_late`, async ({ api, sandbox, service, shopWith, placed, storefront }) => {
      const shop = await shopWith('platform_a', supplierPlatform);
      const { order, acmeJob } = await placed(shop, [ANVIL]);
      await storefront(shop, 'orders/cancelled', { ...order, cancelled_at: new Date().toISOString() });
      await waitForJob(api, shop.user.token, acmeJob.id, settled);
      const fulfillment = buildFulfillmentPayload(supplierPlatform, { orderId: acmeJob.sourceOrderId, trackingNumbers: ['TRACK-ANYWAY'] });
      const sent = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'fulfillments/create', payload: fulfillment });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      const job = await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.fulfillments[0]?.status === 'completed');
      expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'too_late' }]);
      await waitFor(async () => sandbox.fulfillmentsFor(shop.reseller.shopDomain).length === 1, 15_000, 'tracking pushed');
      const [tooLate] = await eventObjects(api, shop.user.token, shop.reseller.id, 'cancellation.too_late', acmeJob.id);
      expect(tooLate.cancellations).toMatchObject([{ outcome: 'too_late' }]);
    });
  }
});

describe('a redelivered signal', () => {
  it('changes nothing once applied, even after a cancellation it met ended too late and freed its quantities', async ({ api, sandbox, service, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { order, acmeJob } = await placed(shop, [ANVIL]);
    // The whole order's cancellation dies (the supplier failing), holding every quantity.
    sandbox.setFaults(shop.acme.shopDomain, { cancelFailNext: 4, cancelStatus: 503 });
    await storefront(shop, 'orders/cancelled', { ...order, cancelled_at: new Date().toISOString() });
    const dead = await waitForJob(api, shop.user.token, acmeJob.id, settled, 20_000);
    expect(dead.cancellations).toMatchObject([{ status: 'dead', scope: 'order' }]);
    // A refund of one line meanwhile finds nothing open: no cancellation of its own.
    const refund = refundOf(order, [{ sku: 'A-1', quantity: 1 }]);
    const webhookId = `wh-refund-${refund.id}`;
    const first = await sendStorefrontWebhook(service.url, shop, 'refunds/create', refund, webhookId);
    expect(first.body).toMatchObject({ received: true, syncJobIds: [] });
    // The supplier ships; the retried cancellation ends too late, which frees the quantities it held.
    sandbox.clearFaults(shop.acme.shopDomain);
    sandbox.fulfilLines(shop.acme.shopDomain, 'platform_a', acmeJob.sourceOrderId);
    expect((await api.post(`/v1/sync_jobs/${acmeJob.id}/cancellations/${dead.cancellations[0].id}/retry`, { token: shop.user.token })).status).toBe(200);
    await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.cancellations[0].outcome === 'too_late');
    // The refund delivered again is the same signal: it is not planned again.
    const again = await sendStorefrontWebhook(service.url, shop, 'refunds/create', refund, webhookId);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ received: true, syncJobIds: [] });
    const job = await getJob(api, shop.user.token, acmeJob.id);
    expect(job.cancellations).toHaveLength(1);
    expect((await auditOf(api, shop.user.token, String(order.id))).filter((entry) => entry.action === 'order.cancelled')).toHaveLength(2);
  });
});

describe('a cancellation that dies and is retried by hand', () => {
  it('raises cancellation.dead and cancellation.retried, with their audit entries, each showing the job with that cancellation', async ({ api, sandbox, shopWith, placed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { order, acmeJob } = await placed(shop, [ANVIL]);
    sandbox.setFaults(shop.acme.shopDomain, { cancelFailNext: 4, cancelStatus: 503 });
    await storefront(shop, 'orders/cancelled', { ...order, cancelled_at: new Date().toISOString() });
    const dead = await waitForJob(api, shop.user.token, acmeJob.id, settled, 20_000);
    const cancellationId = dead.cancellations[0].id;
    expect(dead.cancellations[0]).toMatchObject({ status: 'dead', attempts: 4 });
    const [deadEvent] = await eventObjects(api, shop.user.token, shop.reseller.id, 'cancellation.dead', acmeJob.id);
    expect(deadEvent).toMatchObject({ id: acmeJob.id, cancellations: [{ id: cancellationId, status: 'dead', outcome: null, attempts: 4 }] });
    expect((await api.post(`/v1/sync_jobs/${acmeJob.id}/cancellations/${cancellationId}/retry`, { token: shop.user.token })).status).toBe(200);
    const [retriedEvent] = await eventObjects(api, shop.user.token, shop.reseller.id, 'cancellation.retried', acmeJob.id);
    expect(retriedEvent).toMatchObject({ id: acmeJob.id, cancellations: [{ id: cancellationId, status: 'pending' }] });
    await waitForJob(api, shop.user.token, acmeJob.id, (j) => j.cancellations[0].status === 'completed');
    const audit = await auditOf(api, shop.user.token, cancellationId);
    expect(audit.map((entry) => entry.action)).toEqual(expect.arrayContaining(['cancellation.requested', 'cancellation.dead', 'cancellation.retried', 'cancellation.completed']));
    expect(audit.find((entry) => entry.action === 'cancellation.retried').actorId).toMatch(/^usr_/);
    expect(audit.find((entry) => entry.action === 'cancellation.dead').actorId).toBe('system');
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toHaveLength(1);
  });
});

/** Waits until the job has an event of this type; its objects, oldest first. */
function waitForEvent(api: any, token: string, resellerStoreId: string, type: string, jobId: string): Promise<any[]> {
  return waitFor(async () => {
    const objects = await eventObjects(api, token, resellerStoreId, type, jobId);
    return objects.length > 0 ? objects : null;
  }, 15_000, `a ${type} event of ${jobId}`);
}
