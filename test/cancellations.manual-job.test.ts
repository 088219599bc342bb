/**
 * Partial cancellations of an order whose job was made by hand (POST /v1/sync_jobs, a "manual job").
 * Such a job had no stored order: it read the storefront order at each attempt, and a cancellation of
 * some lines, finding no lines on it, created nothing and told nobody, so the supplier shipped lines
 * the customer had cancelled. order-changes.md: "the supplier side mirrors the storefront for the
 * whole life of the order, or the reseller is told". A manual job now records the order it placed
 * (as its attempt read it), and a partial cancellation applies to it like to any job: at once when
 * it is placed, or when its placement completes (a cancellation that arrived while it was not placed
 * yet), unless the storefront order it read showed those quantities cancelled already (never placed).
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { test } from './support/fixtures.ts';
import { ANVIL, BELL, NUT, createShop, sendStorefrontWebhook, settled, type Shop } from './support/cancellations.ts';
import { getJob, waitForJob } from './support/sync-jobs.ts';
import { check, openTenant, type Target } from './support/watch.ts';
import { queryRows } from './support/database.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0' });

let nextOrderId = 5_610_000 + Math.floor(Math.random() * 10_000) * 10;
let nextRefundId = 97_000;

const it = test
  .extend('shopWith', { scope: 'file' }, ({ api }) => (resellerPlatform: Platform, acmePlatform: Platform) => createShop(api, resellerPlatform, acmePlatform))
  .extend('storefront', { scope: 'file' }, ({ service }) => (shop: Shop, topic: string, payload: unknown) => sendStorefrontWebhook(service.url, shop, topic, payload))
  .extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

/** An order of Acme's anvils and bells and Bolt's nuts on the shop's storefront, which no webhook brought (the reseller routes it by hand). */
function seedOrder(sandbox: any, shop: Shop, extra: Record<string, unknown> = {}): Record<string, any> {
  const platform = shop.reseller.platform;
  const id = platform === 'custom' ? `ord_${nextOrderId++}` : nextOrderId++;
  const order = { ...(sandbox.buildOrderPayload(platform, { id, lines: [ANVIL, BELL, NUT] }) as Record<string, any>), ...extra };
  sandbox.seedOrder(shop.reseller.shopDomain, platform, order);
  return order;
}

async function manualJob(api: any, shop: Shop, order: Record<string, any>) {
  const created = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: shop.acme.id, external_order_id: String(order.id) } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.id as string;
}

/** The storefront's partial cancellation of these lines: a platform_a refund with restock_type cancel, or a custom orders/cancelled with lines. */
function partialCancellation(platform: Platform, order: Record<string, any>, lines: { sku: string; quantity: number }[], at = new Date().toISOString()) {
  if (platform === 'custom') return { topic: 'orders/cancelled', payload: { id: order.id, cancelledAt: at, lines } };
  const refund = {
    id: nextRefundId++,
    order_id: order.id,
    created_at: at,
    note: null,
    transactions: [],
    refund_line_items: lines.map(({ sku, quantity }) => {
      const lineItem = order.line_items.find((item: any) => item.sku === sku);
      return { id: nextRefundId++, line_item_id: lineItem.id, quantity, restock_type: 'cancel', line_item: lineItem };
    }),
  };
  return { topic: 'refunds/create', payload: refund };
}

describe.each(['custom', 'platform_a'] as const)('a %s storefront, a manual job', (platform) => {
  it('placed, then some of its lines cancelled: the supplier is asked to cancel exactly those', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith(platform, 'custom');
    const order = seedOrder(sandbox, shop);
    const jobId = await manualJob(api, shop, order);
    const placed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed', 20_000);

    const { topic, payload } = partialCancellation(platform, order, [{ sku: 'B-1', quantity: 2 }]);
    const response = await storefront(shop, topic, payload);
    expect(response.body).toMatchObject({ received: true, syncJobIds: [jobId] });
    const job = await waitForJob(api, shop.user.token, jobId, settled, 20_000);
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'B-1', quantity: 2 }] }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ orderId: placed.sourceOrderId, lines: [{ sku: 'B-1', quantity: 2 }] }]);
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, 'custom', placed.sourceOrderId) as any;
    expect(supplierOrder.lines.map((line: any) => [line.sku, line.cancelledQuantity])).toEqual([['A-1', 0], ['B-1', 2]]);

    // The rest cancelled line by line: the job's every line is then cancelled, never more than it was ordered.
    const rest = partialCancellation(platform, order, [{ sku: 'A-1', quantity: 2 }, { sku: 'B-1', quantity: 3 }]);
    await storefront(shop, rest.topic, rest.payload);
    const after = await waitForJob(api, shop.user.token, jobId, (j) => j.cancellations.length === 2 && settled(j), 20_000);
    expect(after.cancellations[1]).toMatchObject({ outcome: 'cancelled', lines: [{ sku: 'A-1', quantity: 2 }, { sku: 'B-1', quantity: 1 }] });
  }, 60_000);
});

describe('a custom storefront, a manual job not placed yet', () => {
  it('some lines cancelled while its placement is in flight: cancelled at the supplier once it is placed', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const order = seedOrder(sandbox, shop);
    // The supplier is slow: the attempt reads the storefront order (nothing cancelled yet), then waits on the supplier's answer.
    sandbox.setFaults(shop.acme.shopDomain, { latencyMs: 2_000 });
    const jobId = await manualJob(api, shop, order);
    await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'processing', 10_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const { topic, payload } = partialCancellation('custom', order, [{ sku: 'A-1', quantity: 1 }]);
    expect((await storefront(shop, topic, payload)).body).toMatchObject({ received: true });
    const placed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed', 20_000);
    sandbox.clearFaults(shop.acme.shopDomain);
    // The supplier order holds both anvils (the attempt read them open): one is cancelled after.
    const job = await waitForJob(api, shop.user.token, jobId, settled, 20_000);
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'A-1', quantity: 1 }] }]);
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, 'custom', placed.sourceOrderId) as any;
    expect(supplierOrder.lines.map((line: any) => [line.sku, line.quantity, line.cancelledQuantity])).toEqual([['A-1', 2, 1], ['B-1', 3, 0]]);
  }, 60_000);

  it('some lines cancelled before its placement, the storefront showing them: placed without them, and nothing cancelled twice', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const order = seedOrder(sandbox, shop);
    // Its attempts fail at the supplier until it is dead (an automatic retry would race the steps below).
    sandbox.setFaults(shop.acme.shopDomain, { failNext: 4, status: 500 });
    const jobId = await manualJob(api, shop, order);
    await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'dead', 10_000);
    // The customer cancels one bell; the storefront shows it, and its webhook arrives before the retry.
    const at = new Date();
    const { topic, payload } = partialCancellation('custom', order, [{ sku: 'B-1', quantity: 1 }], at.toISOString());
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', {
      ...order,
      updatedAt: new Date(at.getTime() + 1_000).toISOString(),
      lines: order.lines.map((line: any) => (line.sku === 'B-1' ? { ...line, cancelledQuantity: 1 } : line)),
    });
    await storefront(shop, topic, payload);
    const retried = await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    const placed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed', 20_000);
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, 'custom', placed.sourceOrderId) as any;
    expect(supplierOrder.lines.map((line: any) => [line.sku, line.quantity])).toEqual([['A-1', 2], ['B-1', 2]]);
    // The bell the storefront showed cancelled was never placed: it is not cancelled again from the two placed.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await getJob(api, shop.user.token, jobId)).cancellations).toEqual([]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toEqual([]);
    // A later cancellation of a bell cancels one of the two placed.
    const later = partialCancellation('custom', order, [{ sku: 'B-1', quantity: 1 }], new Date(at.getTime() + 5_000).toISOString());
    await storefront(shop, later.topic, later.payload);
    const job = await waitForJob(api, shop.user.token, jobId, settled, 20_000);
    expect(job.cancellations).toMatchObject([{ outcome: 'cancelled', lines: [{ sku: 'B-1', quantity: 1 }] }]);
  }, 60_000);
});

describe('a custom storefront, a manual job, its order routed later for another supplier', () => {
  it("the routing's reading of the lines cancelled cancels at the manual job's supplier only what its own read did not show", async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const id = `ord_${nextOrderId++}`;
    const built = sandbox.buildOrderPayload('custom', { id, lines: [ANVIL, BELL, NUT] }) as Record<string, any>;
    const withBells = (cancelled: number, updatedAt: string) => ({ ...built, updatedAt, lines: built.lines.map((line: any) => (line.sku === 'B-1' ? { ...line, cancelledQuantity: cancelled } : line)) });
    // One bell was cancelled before the reseller routed the order to Acme by hand: Acme gets two.
    const read = withBells(1, new Date().toISOString());
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', read);
    const jobId = await manualJob(api, shop, read);
    const placed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed', 20_000);
    const supplierOrder = () => sandbox.orderOf(shop.acme.shopDomain, 'custom', placed.sourceOrderId) as any;
    expect(supplierOrder().lines.map((line: any) => [line.sku, line.quantity])).toEqual([['A-1', 2], ['B-1', 2]]);
    // A second bell is cancelled; then the order's orders/create arrives late, showing both: it routes Bolt's nuts.
    const routed = await storefront(shop, 'orders/create', withBells(2, new Date(Date.now() + 1_000).toISOString()));
    expect((routed.body as { syncJobIds: string[] }).syncJobIds).toHaveLength(2);
    // Acme is asked for one bell: the first was never placed.
    const job = await waitForJob(api, shop.user.token, jobId, settled, 20_000);
    expect(job.cancellations).toMatchObject([{ outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'B-1', quantity: 1 }] }]);
    expect(supplierOrder().lines.map((line: any) => [line.sku, line.cancelledQuantity])).toEqual([['A-1', 0], ['B-1', 1]]);
  }, 60_000);
});

describe('a custom storefront, a manual job, a later bell cancelled by its webhook, then its order routed for another supplier', () => {
  it("the routing's reading of the lines cancelled does not cancel again at the manual job's supplier what a webhook already cancelled there", async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const id = `ord_${nextOrderId++}`;
    const built = sandbox.buildOrderPayload('custom', { id, lines: [ANVIL, BELL, NUT] }) as Record<string, any>;
    const withBells = (cancelled: number, updatedAt: string) => ({ ...built, updatedAt, lines: built.lines.map((line: any) => (line.sku === 'B-1' ? { ...line, cancelledQuantity: cancelled } : line)) });
    // One bell was cancelled before the reseller routed the order to Acme by hand (its webhook lost): Acme gets two.
    const readAt = Date.now();
    const read = withBells(1, new Date(readAt).toISOString());
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', read);
    const jobId = await manualJob(api, shop, read);
    const placed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed', 20_000);
    const supplierOrder = () => sandbox.orderOf(shop.acme.shopDomain, 'custom', placed.sourceOrderId) as any;
    expect(supplierOrder().lines.map((line: any) => [line.sku, line.quantity])).toEqual([['A-1', 2], ['B-1', 2]]);
    // A second bell is cancelled; its webhook arrives: Acme cancels one of its two.
    const { topic, payload } = partialCancellation('custom', read, [{ sku: 'B-1', quantity: 1 }], new Date(readAt + 500).toISOString());
    await storefront(shop, topic, payload);
    expect((await waitForJob(api, shop.user.token, jobId, settled, 20_000)).cancellations).toMatchObject([{ outcome: 'cancelled', lines: [{ sku: 'B-1', quantity: 1 }] }]);
    // Then the order's orders/create arrives late, showing both bells cancelled: it routes Bolt's nuts.
    const routed = await storefront(shop, 'orders/create', withBells(2, new Date(readAt + 1_000).toISOString()));
    expect((routed.body as { syncJobIds: string[] }).syncJobIds).toHaveLength(2);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    // Both cancelled bells are accounted for (one never placed, one cancelled by its webhook): Acme keeps the customer's last bell.
    expect((await getJob(api, shop.user.token, jobId)).cancellations).toHaveLength(1);
    expect(supplierOrder().lines.map((line: any) => [line.sku, line.cancelledQuantity])).toEqual([['A-1', 0], ['B-1', 1]]);
  }, 60_000);
});

describe('the divergence watch, a manual job', () => {
  it("reads an order's lines cancelled, their webhook lost: cancelled at the manual job's supplier", async ({ api, sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const id = `ord_${nextOrderId++}`;
    const order = sandbox.buildOrderPayload('custom', {
      id,
      lines: [
        { sku: 'W-1', title: 'Widget', vendor: supplier.vendorTag, quantity: 3, price: '4.00' },
        { sku: 'W-2', title: 'Gadget', vendor: supplier.vendorTag, quantity: 1, price: '9.00' },
      ],
    }) as Record<string, any>;
    sandbox.seedOrder(tenant.reseller.shopDomain, 'custom', order);
    const created = await api.post('/v1/sync_jobs', { token: tenant.user.token, body: { source_store_id: supplier.id, external_order_id: id } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const placed = await waitForJob(api, tenant.user.token, created.body.id, (job) => job.status === 'completed', 20_000);
    // Two widgets cancelled on the storefront; the webhook is lost.
    sandbox.seedOrder(tenant.reseller.shopDomain, 'custom', {
      ...order,
      updatedAt: new Date(Date.now() + 1_000).toISOString(),
      lines: order.lines.map((line: any) => (line.sku === 'W-1' ? { ...line, cancelledQuantity: 2 } : line)),
    });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    const job = await waitForJob(api, tenant.user.token, created.body.id, settled, 20_000);
    expect(job.cancellations).toMatchObject([{ outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'W-1', quantity: 2 }] }]);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toMatchObject([{ orderId: placed.sourceOrderId, lines: [{ sku: 'W-1', quantity: 2 }] }]);
  }, 60_000);
});

describe('the divergence watch, a manual job whose read showed some lines cancelled', () => {
  it('cancels only what was cancelled after its read: what the read showed was never placed', async ({ api, sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const id = `ord_${nextOrderId++}`;
    const built = sandbox.buildOrderPayload('custom', {
      id,
      lines: [
        { sku: 'W-1', title: 'Widget', vendor: supplier.vendorTag, quantity: 3, price: '4.00' },
        { sku: 'W-2', title: 'Gadget', vendor: supplier.vendorTag, quantity: 2, price: '9.00' },
      ],
    }) as Record<string, any>;
    // One widget was cancelled before the reseller routed the order by hand (its webhook lost).
    const order = { ...built, lines: built.lines.map((line: any) => (line.sku === 'W-1' ? { ...line, cancelledQuantity: 1 } : line)) };
    sandbox.seedOrder(tenant.reseller.shopDomain, 'custom', order);
    const created = await api.post('/v1/sync_jobs', { token: tenant.user.token, body: { source_store_id: supplier.id, external_order_id: id } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const placed = await waitForJob(api, tenant.user.token, created.body.id, (job) => job.status === 'completed', 20_000);
    const supplierOrder = sandbox.orderOf(supplier.shopDomain, 'custom', placed.sourceOrderId) as any;
    expect(supplierOrder.lines.map((line: any) => [line.sku, line.quantity])).toEqual([['W-1', 2], ['W-2', 2]]);
    // Then a gadget is cancelled; that webhook is lost too. A pass lists the order.
    sandbox.seedOrder(tenant.reseller.shopDomain, 'custom', {
      ...order,
      updatedAt: new Date(Date.now() + 1_000).toISOString(),
      lines: order.lines.map((line: any) => (line.sku === 'W-2' ? { ...line, cancelledQuantity: 1 } : line)),
    });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    const job = await waitForJob(api, tenant.user.token, created.body.id, settled, 20_000);
    expect(job.cancellations).toMatchObject([{ outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'W-2', quantity: 1 }] }]);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toMatchObject([{ lines: [{ sku: 'W-2', quantity: 1 }] }]);
    // The next pass finds nothing missing.
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    expect((await getJob(api, tenant.user.token, created.body.id)).cancellations).toHaveLength(1);
  }, 60_000);
});

describe('a custom storefront, a SKU two suppliers sell in one order, both routed by hand', () => {
  it("one of the two cancelled (by SKU, the first line's) before the jobs were made: neither supplier is asked to cancel", async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const id = `ord_${nextOrderId++}`;
    const built = sandbox.buildOrderPayload('custom', { id, lines: [ANVIL, { ...BELL, sku: 'SHARED', quantity: 1 }, { ...NUT, sku: 'SHARED', quantity: 1 }] }) as Record<string, any>;
    // The customer cancels one SHARED: the storefront takes its first line of it (Acme's); the custom webhook names the SKU only.
    const at = new Date();
    const shown = { ...built, updatedAt: new Date(at.getTime() + 1_000).toISOString(), lines: built.lines.map((line: any, i: number) => (i === 1 ? { ...line, cancelledQuantity: 1 } : line)) };
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', shown);
    expect((await storefront(shop, 'orders/cancelled', { id, cancelledAt: at.toISOString(), lines: [{ sku: 'SHARED', quantity: 1 }] })).body).toMatchObject({ received: true });
    // The reseller routes the order by hand: Bolt's job first, then Acme's.
    const boltJob = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: shop.bolt.id, external_order_id: id } });
    expect(boltJob.status, JSON.stringify(boltJob.body)).toBe(201);
    await waitForJob(api, shop.user.token, boltJob.body.id, (job) => job.status === 'completed', 20_000);
    const acmeJob = await manualJob(api, shop, shown);
    await waitForJob(api, shop.user.token, acmeJob, (job) => job.status === 'completed', 20_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    // Bolt's unit was never cancelled by the customer: it stays. Acme's was never placed.
    expect((await getJob(api, shop.user.token, boltJob.body.id)).cancellations).toEqual([]);
    expect(sandbox.cancellationsFor(shop.bolt.shopDomain)).toEqual([]);
    expect((await getJob(api, shop.user.token, acmeJob)).cancellations).toEqual([]);
  }, 60_000);
});

describe('a custom storefront, a SKU two suppliers sell in one order, both routed by hand, one placement in flight', () => {
  it("one of the two cancelled (by SKU) while the second supplier's placement is in flight: only the first line's supplier cancels", async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const id = `ord_${nextOrderId++}`;
    const order = sandbox.buildOrderPayload('custom', { id, lines: [ANVIL, { ...BELL, sku: 'SHARED', quantity: 1 }, { ...NUT, sku: 'SHARED', quantity: 1 }] }) as Record<string, any>;
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', order);
    const acmeJob = await manualJob(api, shop, order);
    await waitForJob(api, shop.user.token, acmeJob, (job) => job.status === 'completed', 20_000);
    // Bolt is slow: its attempt reads the storefront order (nothing cancelled), then waits on Bolt's answer.
    sandbox.setFaults(shop.bolt.shopDomain, { latencyMs: 2_000 });
    const boltJob = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: shop.bolt.id, external_order_id: id } });
    expect(boltJob.status, JSON.stringify(boltJob.body)).toBe(201);
    await waitForJob(api, shop.user.token, boltJob.body.id, (job) => job.status === 'processing', 10_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // The customer cancels one SHARED; the storefront takes its first line of it (Acme's).
    expect((await storefront(shop, 'orders/cancelled', { id, cancelledAt: new Date().toISOString(), lines: [{ sku: 'SHARED', quantity: 1 }] })).body).toMatchObject({ received: true, syncJobIds: [acmeJob] });
    await waitForJob(api, shop.user.token, boltJob.body.id, (job) => job.status === 'completed', 20_000);
    sandbox.clearFaults(shop.bolt.shopDomain);
    expect((await waitForJob(api, shop.user.token, acmeJob, settled, 20_000)).cancellations).toMatchObject([{ outcome: 'cancelled', lines: [{ sku: 'SHARED', quantity: 1 }] }]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    // Cancelled once: Bolt's unit, which the customer kept, is not cancelled too when its placement completes.
    expect((await getJob(api, shop.user.token, boltJob.body.id)).cancellations).toEqual([]);
    expect(sandbox.cancellationsFor(shop.bolt.shopDomain)).toEqual([]);
  }, 60_000);
});

describe.each(['replays it (its Idempotency-Key)', 'finds it by its reference (a day later, the key expired)', 'replays it, its order unreadable just then'] as const)('a custom storefront, a manual job whose supplier accepted its first attempt, the answer lost, a retry that %s', (how) => {
  // The supplier holds what the FIRST attempt that reached it sent; the job keeps that order (`sentOrder`,
  // written before the create call), sends it again on every retry, and records it once placed: a line
  // cancelled between that attempt's read and the retry's is cancelled at the supplier (once).
  it('some lines cancelled before the retry that finds the order: the supplier, holding what the first attempt read, is asked to cancel them', async ({ api, sandbox, service, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const order = seedOrder(sandbox, shop);
    // Acme accepts the order (three bells), then every answer is lost: the job dies without the supplier's order id.
    sandbox.setFaults(shop.acme.shopDomain, { acceptThenDropNext: 4 });
    const jobId = await manualJob(api, shop, order);
    await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'dead', 20_000);
    sandbox.clearFaults(shop.acme.shopDomain);
    const [held] = sandbox.ordersFor(shop.acme.shopDomain) as any[];
    expect(held.order.lines.map((line: any) => [line.sku, line.quantity])).toEqual([['A-1', 2], ['B-1', 3]]);
    // The customer cancels a bell; the storefront shows it, and its webhook arrives.
    const at = new Date();
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', {
      ...order,
      updatedAt: new Date(at.getTime() + 1_000).toISOString(),
      lines: order.lines.map((line: any) => (line.sku === 'B-1' ? { ...line, cancelledQuantity: 1 } : line)),
    });
    const { topic, payload } = partialCancellation('custom', order, [{ sku: 'B-1', quantity: 1 }], at.toISOString());
    await storefront(shop, topic, payload);
    // The create's replay answers; the read of the order it names fails: that attempt fails, and the next one (the create replayed) reads it.
    if (how === 'replays it, its order unreadable just then') sandbox.setFaults(shop.acme.shopDomain, { faultsAfter: 1, failNext: 1, status: 500 });
    if (how === 'finds it by its reference (a day later, the key expired)') {
      await queryRows(service.databaseUrl, "update sync_jobs set created_at = created_at - interval '25 hours' where id = $1", [jobId]);
      sandbox.forgetIdempotencyKeys(shop.acme.shopDomain);
    }
    // The reseller retries the job: it finds (or gets back) the order Acme holds, with three bells.
    expect((await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token })).status).toBe(200);
    const placed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed', 20_000);
    expect(placed.sourceOrderId).toBe(held.id);
    // Placed by the retry's first attempt (four attempts before it died, and this one), or its second when the read failed.
    expect(placed.attempts).toBe(how === 'replays it, its order unreadable just then' ? 6 : 5);
    expect(sandbox.ordersFor(shop.acme.shopDomain)).toHaveLength(1);
    // The bell the customer cancelled is in Acme's order: it must be cancelled there, once.
    const job = await waitForJob(api, shop.user.token, jobId, settled, 10_000);
    expect(job.cancellations).toMatchObject([{ outcome: 'cancelled', lines: [{ sku: 'B-1', quantity: 1 }] }]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toMatchObject([{ orderId: held.id, lines: [{ sku: 'B-1', quantity: 1 }] }]);
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, 'custom', held.id) as any;
    expect(supplierOrder.lines.map((line: any) => [line.sku, line.quantity, line.cancelledQuantity])).toEqual([['A-1', 2, 0], ['B-1', 3, 1]]);
    // The customer keeps two bells: nothing more is cancelled.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await getJob(api, shop.user.token, jobId)).cancellations).toHaveLength(1);
  }, 60_000);
});

describe('a custom storefront, a SKU two suppliers sell in one order, a manual job whose read left out earlier lines cancelled, and a webhook job', () => {
  it("one of the two cancelled by SKU: the supplier of the storefront's first line of it cancels, whichever job's stored order lists it first", async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const id = `ord_${nextOrderId++}`;
    // Anvils and chains (Acme), then one SHARED of Bolt's, then one of Acme's: the storefront's first line of SHARED is Bolt's.
    const built = sandbox.buildOrderPayload('custom', {
      id,
      lines: [ANVIL, { ...BELL, sku: 'C-1', title: 'Chain', quantity: 1 }, { ...NUT, sku: 'SHARED', quantity: 1 }, { ...BELL, sku: 'SHARED', quantity: 1 }],
    }) as Record<string, any>;
    // The anvils and the chain were cancelled before the reseller routed the order to Acme by hand: Acme gets its SHARED only.
    const cancelled = (skus: Record<number, number>, updatedAt: string) => ({ ...built, updatedAt, lines: built.lines.map((line: any, i: number) => (skus[i] ? { ...line, cancelledQuantity: skus[i] } : line)) });
    const readAt = Date.now();
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', cancelled({ 0: 2, 1: 1 }, new Date(readAt).toISOString()));
    const acmeJob = await manualJob(api, shop, built);
    const acmePlaced = await waitForJob(api, shop.user.token, acmeJob, (job) => job.status === 'completed', 20_000);
    expect((sandbox.orderOf(shop.acme.shopDomain, 'custom', acmePlaced.sourceOrderId) as any).lines.map((line: any) => [line.sku, line.quantity])).toEqual([['SHARED', 1]]);
    // The order's orders/create arrives late (the order as created): it routes Bolt's SHARED.
    const routed = await storefront(shop, 'orders/create', built);
    const boltJob = (routed.body as { syncJobIds: string[] }).syncJobIds.find((jobId) => jobId !== acmeJob)!;
    expect(boltJob).toBeDefined();
    const boltPlaced = await waitForJob(api, shop.user.token, boltJob, (job) => job.status === 'completed', 20_000);
    // The customer cancels one SHARED: the storefront takes its first line of it, Bolt's; the custom webhook names the SKU only.
    const at = new Date(readAt + 2_000);
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', cancelled({ 0: 2, 1: 1, 2: 1 }, new Date(at.getTime() + 1_000).toISOString()));
    expect((await storefront(shop, 'orders/cancelled', { id, cancelledAt: at.toISOString(), lines: [{ sku: 'SHARED', quantity: 1 }] })).body).toMatchObject({ received: true });
    // Bolt cancels its SHARED; Acme's, which the customer kept, stays.
    expect((await waitForJob(api, shop.user.token, boltJob, settled, 20_000)).cancellations).toMatchObject([{ outcome: 'cancelled', lines: [{ sku: 'SHARED', quantity: 1 }] }]);
    expect(sandbox.cancellationsFor(shop.bolt.shopDomain)).toMatchObject([{ orderId: boltPlaced.sourceOrderId }]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await getJob(api, shop.user.token, acmeJob)).cancellations).toEqual([]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toEqual([]);
  }, 60_000);
});

describe.each(['platform_a', 'custom'] as const)('a custom storefront, a %s supplier that refused a manual job\'s first attempts (a 500: nothing created)', (acmePlatform) => {
  // The supplier holds what the LAST attempt sent (the earlier ones created nothing). Its create answers;
  // the read of the order it names fails just then: the job must not record the first order sent, or the
  // bell the customer cancelled before the last attempt (never placed) is cancelled again at the supplier,
  // one of the bells the customer kept. platform_a's create answer lists the lines (no read); custom's
  // does not, so that attempt fails and the next one (the create replayed) reads the order.
  it('some lines cancelled before the retry that creates the order, the order unreadable just then: nothing is cancelled at the supplier', async ({ api, sandbox, shopWith, storefront }) => {
    const shop = await shopWith('custom', acmePlatform);
    const order = seedOrder(sandbox, shop);
    sandbox.setFaults(shop.acme.shopDomain, { alwaysFail: true, status: 500 });
    const jobId = await manualJob(api, shop, order);
    await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'dead', 20_000);
    sandbox.clearFaults(shop.acme.shopDomain);
    expect(sandbox.ordersFor(shop.acme.shopDomain)).toEqual([]);
    // The customer cancels a bell; the storefront shows it, and its webhook arrives.
    const at = new Date();
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', {
      ...order,
      updatedAt: new Date(at.getTime() + 1_000).toISOString(),
      lines: order.lines.map((line: any) => (line.sku === 'B-1' ? { ...line, cancelledQuantity: 1 } : line)),
    });
    const { topic, payload } = partialCancellation('custom', order, [{ sku: 'B-1', quantity: 1 }], at.toISOString());
    await storefront(shop, topic, payload);
    // The retry's create is answered (the order created now, two bells); the read of that order, if made, fails.
    sandbox.setFaults(shop.acme.shopDomain, { faultsAfter: 1, failNext: 1, status: 500 });
    expect((await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token })).status).toBe(200);
    const placed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed', 20_000);
    // Four attempts refused, then the retry's: platform_a's first (its answer names the lines), custom's second (its read failed once).
    expect(placed.attempts).toBe(acmePlatform === 'custom' ? 6 : 5);
    sandbox.clearFaults(shop.acme.shopDomain);
    const held = sandbox.ordersFor(shop.acme.shopDomain) as any[];
    expect(held).toHaveLength(1);
    expect(String(held[0].id)).toBe(placed.sourceOrderId);
    // The customer keeps two bells, both in the supplier's order: nothing is cancelled there.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await getJob(api, shop.user.token, jobId)).cancellations).toEqual([]);
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toEqual([]);
  }, 60_000);
});
