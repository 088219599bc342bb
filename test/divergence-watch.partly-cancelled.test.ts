/**
 * The divergence watch and PARTIAL storefront cancellations (order-changes.md, "Cancelled on the
 * storefront, still open at the supplier"; "Repeated or overlapping requests never cancel more than
 * was ordered"). A routed, placed order some of whose line quantities the customer then cancels, with
 * that partial cancellation's webhook (custom orders/cancelled with `lines`, platform_a refunds/create)
 * lost for good: the storefront order shows the quantities cancelled (custom `cancelledQuantity`,
 * platform_a `quantity` less `fulfillable_quantity`), and a pass that lists it must have the supplier
 * cancel them, once: not again on the next pass, nor when the lost webhook arrives late after all.
 * Before: a pass only acted on orders cancelled whole, and the supplier shipped what was cancelled.
 */
import { describe, expect } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { sendWebhook, type JsonObject, type Sandbox } from './sandbox/server.ts';
import { waitFor } from './support/wait.ts';
import { ORDERS_PATH } from './support/webhooks.ts';
import { auditOf, check, openTenant, placedJobOf, type Target, type Tenant } from './support/watch.ts';

test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

let nextOrderNumber = 970_000 + Math.floor(Math.random() * 9_000) * 10;
let nextRefundId = 77_000 + Math.floor(Math.random() * 1000) * 10;

interface Routed {
  order: Record<string, any>;
  externalOrderId: string;
  jobId: string;
  sourceOrderId: string;
}

/** A customer orders 3 of one line of the (custom) supplier's; its webhook routes it and the job places it. */
async function placeThree(sandbox: Sandbox, tenant: Tenant): Promise<Routed> {
  const n = nextOrderNumber++;
  const platform = tenant.reseller.platform;
  const order = sandbox.buildOrderPayload(platform, {
    id: platform === 'custom' ? `pc-${n}` : n,
    lines: [{ sku: 'PC-1', title: 'Pitcher', vendor: tenant.suppliers[0]!.vendorTag, quantity: 3, price: '10.00' }],
    email: 'ada@example.com',
  });
  expect(await sandbox.placeCustomerOrder(tenant.reseller.shopDomain, platform, order)).toMatchObject({ delivered: { status: 200 } });
  const externalOrderId = String(order.id);
  return { order: order as Record<string, any>, externalOrderId, ...(await placedJobOf(tenant, externalOrderId)) };
}

/** The storefront order now shows `cancelled` of its line cancelled (the order itself is not): its list entry and GET change, no webhook is sent. */
function showCancelled(sandbox: Sandbox, tenant: Tenant, routed: Routed, cancelled: number): void {
  const platform = tenant.reseller.platform;
  const order = structuredClone(sandbox.orderOf(tenant.reseller.shopDomain, platform, routed.externalOrderId)) as Record<string, any>;
  if (platform === 'custom') order.lines[0].cancelledQuantity = cancelled;
  else order.line_items[0].fulfillable_quantity = order.line_items[0].quantity - cancelled;
  // The sandbox stamps the order's update time (updatedAt / updated_at) as it saves it.
  sandbox.seedOrder(tenant.reseller.shopDomain, platform, order as JsonObject);
}

/** The storefront's partial cancellation webhook of `quantity` of the line, made at `at` (null: no readable time). */
function cancelLineWebhook(tenant: Tenant, routed: Routed, quantity: number, at: string | null) {
  const delivery = { targetUrl: `${tenant.target.url}${ORDERS_PATH}`, shopDomain: tenant.reseller.shopDomain, secret: tenant.reseller.secret };
  if (tenant.reseller.platform === 'custom') {
    return sendWebhook({ ...delivery, topic: 'orders/cancelled', payload: { id: routed.order.id, cancelledAt: at ?? 'just now', lines: [{ sku: 'PC-1', quantity }] } });
  }
  const lineItem = routed.order.line_items[0];
  const refund = {
    id: nextRefundId++,
    order_id: routed.order.id,
    ...(at !== null && { created_at: at }),
    note: null,
    refund_line_items: [{ id: nextRefundId++, line_item_id: lineItem.id, quantity, restock_type: 'cancel', line_item: lineItem }],
    transactions: [],
  };
  return sendWebhook({ ...delivery, topic: 'refunds/create', payload: refund });
}

interface CancellationRow {
  id: string;
  status: string;
  outcome: string | null;
  scope: string;
  lines: { sku: string; quantity: number }[];
}

const cancellationsOf = (target: Target, jobId: string) =>
  queryRows<CancellationRow>(target.databaseUrl, 'select id, status, outcome, scope, lines from cancellations where sync_job_id = $1 order by id', [jobId]);

const settled = (target: Target, jobId: string, count: number) =>
  waitFor(async () => {
    const rows = await cancellationsOf(target, jobId);
    return rows.length === count && rows.every((row) => row.status === 'completed') ? rows : null;
  }, 20_000, `${count} cancellation(s) of job ${jobId} completed`);

describe.each(['custom', 'platform_a'] as const)('a %s storefront order partly cancelled after it was placed', (platform) => {
  it('its webhook lost: a pass has the supplier cancel the quantity the storefront shows cancelled, once; the next pass and the late webhook cancel nothing more', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, platform, ['custom']);
    const supplier = tenant.suppliers[0]!;
    const routed = await placeThree(sandbox, tenant);
    const before = new Date(Date.now() - 1000).toISOString();
    showCancelled(sandbox, tenant, routed, 1);

    const pass = await check(tenant);
    expect(pass).toMatchObject({ status: 'succeeded', repairs: 1, error: null });
    expect(await settled(target, routed.jobId, 1)).toMatchObject([{ outcome: 'cancelled', scope: 'lines', lines: [{ sku: 'PC-1', quantity: 1 }] }]);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toMatchObject([{ orderId: routed.sourceOrderId, lines: [{ sku: 'PC-1', quantity: 1 }] }]);
    expect(await auditOf(tenant, 'order.cancelled')).toEqual([
      { resource_id: routed.externalOrderId, metadata: expect.objectContaining({ source: 'watch', watchPassId: pass.id, scope: 'lines', lines: [expect.objectContaining({ sku: 'PC-1', quantity: 1 })] }) },
    ]);

    // The next pass lists the order again (the overlap): nothing more is cancelled.
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    // The lost webhook arrives late after all (made before the order was listed): recorded, cuts nothing more.
    const late = await cancelLineWebhook(tenant, routed, 1, before);
    expect(late.status, JSON.stringify(late.body)).toBe(200);
    expect(late.body).toMatchObject({ received: true, syncJobIds: [] });
    await delay(500);
    expect(await cancellationsOf(target, routed.jobId)).toHaveLength(1);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toHaveLength(1);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toHaveLength(1);
  });

  it('a pass cancels only what no signal recorded: a partial cancellation whose webhook came is not cancelled again beside one whose webhook was lost', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, platform, ['custom']);
    const supplier = tenant.suppliers[0]!;
    const routed = await placeThree(sandbox, tenant);
    // The first pitcher: its webhook comes, and the supplier cancels it.
    showCancelled(sandbox, tenant, routed, 1);
    const delivered = await cancelLineWebhook(tenant, routed, 1, new Date().toISOString());
    expect(delivered.body).toMatchObject({ received: true, syncJobIds: [routed.jobId] });
    await settled(target, routed.jobId, 1);
    // The second: its webhook is lost. The storefront shows 2 cancelled; the service recorded 1.
    await delay(20);
    showCancelled(sandbox, tenant, routed, 2);

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    const rows = await settled(target, routed.jobId, 2);
    expect(rows.map((row) => [row.outcome, row.lines])).toEqual([
      ['cancelled', [{ sku: 'PC-1', quantity: 1 }]],
      ['cancelled', [{ sku: 'PC-1', quantity: 1 }]],
    ]);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toHaveLength(2);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toHaveLength(2);
  });

  it('a late webhook with no readable time, after a pass cancelled its quantity, cancels nothing more', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, platform, ['custom']);
    const supplier = tenant.suppliers[0]!;
    const routed = await placeThree(sandbox, tenant);
    showCancelled(sandbox, tenant, routed, 1);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    await settled(target, routed.jobId, 1);

    const late = await cancelLineWebhook(tenant, routed, 1, null);
    expect(late.status, JSON.stringify(late.body)).toBe(200);
    expect(late.body).toMatchObject({ received: true, syncJobIds: [] });
    await delay(500);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toHaveLength(1);
  });

  it('a new partial cancellation whose webhook has no readable time, taken for the one a pass cancelled: the next pass finds the difference and cancels it', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, platform, ['custom']);
    const supplier = tenant.suppliers[0]!;
    const routed = await placeThree(sandbox, tenant);
    showCancelled(sandbox, tenant, routed, 1);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    await settled(target, routed.jobId, 1);

    // The customer cancels a second pitcher; its webhook carries no time, and fits in what the pass cancelled.
    await delay(20);
    showCancelled(sandbox, tenant, routed, 2);
    const timeless = await cancelLineWebhook(tenant, routed, 1, null);
    expect(timeless.body).toMatchObject({ received: true, syncJobIds: [] });
    // The storefront shows 2 cancelled, the signals account for 1: the next pass cancels the other.
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    expect((await settled(target, routed.jobId, 2)).map((row) => [row.outcome, row.lines])).toEqual([
      ['cancelled', [{ sku: 'PC-1', quantity: 1 }]],
      ['cancelled', [{ sku: 'PC-1', quantity: 1 }]],
    ]);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toHaveLength(2);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
  });
});

describe('a platform_a storefront order with a line that names no vendor (routed to no supplier)', () => {
  it('that line shown cancelled cancels nothing at the supplier of a line with the same SKU, on this pass or the next', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const n = nextOrderNumber++;
    const order = sandbox.buildOrderPayload('platform_a', {
      id: n,
      lines: [
        { sku: 'PC-1', title: 'Pitcher', vendor: supplier.vendorTag, quantity: 3, price: '10.00' },
        { sku: 'PC-1', title: 'Pitcher (engraved)', vendor: '', quantity: 1, price: '12.00' },
      ],
      email: 'ada@example.com',
    }) as Record<string, any>;
    expect(await sandbox.placeCustomerOrder(tenant.reseller.shopDomain, 'platform_a', order)).toMatchObject({ delivered: { status: 200 } });
    const { jobId } = await placedJobOf(tenant, String(n));
    // The customer cancels the engraved pitcher; its refund webhook is lost.
    const shown = structuredClone(sandbox.orderOf(tenant.reseller.shopDomain, 'platform_a', String(n))) as Record<string, any>;
    shown.line_items[1].fulfillable_quantity = 0;
    sandbox.seedOrder(tenant.reseller.shopDomain, 'platform_a', shown as JsonObject);

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    await delay(500);
    expect(await cancellationsOf(target, jobId)).toEqual([]);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toEqual([]);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    await delay(500);
    expect(await cancellationsOf(target, jobId)).toEqual([]);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toEqual([]);
  });
});

describe('a platform_a storefront order fulfilled with the tracking the service pushed', () => {
  it('its lines no longer fulfillable are shipped, not cancelled: a pass cancels nothing', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const supplier = tenant.suppliers[0]!;
    const routed = await placeThree(sandbox, tenant);
    sandbox.shipOrder(supplier.shopDomain, 'custom', routed.sourceOrderId, { trackingNumbers: ['PC-TRK-1'] });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 1 });
    await waitFor(async () => sandbox.fulfillmentsFor(tenant.reseller.shopDomain).length === 1, 20_000, 'the tracking pushed to the storefront');
    // As the platform shows the order once fulfilled: nothing left fulfillable, the fulfillment naming its line.
    const order = structuredClone(sandbox.orderOf(tenant.reseller.shopDomain, 'platform_a', routed.externalOrderId)) as Record<string, any>;
    const line = order.line_items[0];
    line.fulfillable_quantity = 0;
    order.fulfillments = order.fulfillments.map((fulfillment: Record<string, any>) => ({ ...fulfillment, line_items: [{ id: line.id, sku: line.sku, quantity: 3 }] }));
    order.fulfillment_status = 'fulfilled';
    sandbox.seedOrder(tenant.reseller.shopDomain, 'platform_a', order as JsonObject);

    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    // A fulfillment that names no lines says nothing of what it shipped: nothing is taken for cancelled either.
    order.fulfillments = order.fulfillments.map((fulfillment: Record<string, any>) => ({ ...fulfillment, line_items: [] }));
    sandbox.seedOrder(tenant.reseller.shopDomain, 'platform_a', { ...order, updated_at: new Date().toISOString() } as JsonObject);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', repairs: 0 });
    await delay(300);
    expect(await cancellationsOf(target, routed.jobId)).toEqual([]);
    expect(sandbox.cancellationsFor(supplier.shopDomain)).toEqual([]);
    expect(await auditOf(tenant, 'order.cancelled')).toEqual([]);
  });
});
