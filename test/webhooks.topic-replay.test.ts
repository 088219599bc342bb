/**
 * Review 3: a platform signs a webhook's body only (platforms.md: HMAC-SHA256 over the raw body
 * bytes); `X-Platform-Topic` and `X-Platform-Webhook-Id` are not signed. A cancellation webhook
 * therefore has to say it is one in its signed body: platform_a's `orders/cancelled` is the Order
 * with `cancelled_at` set, custom's Cancellation carries `cancelledAt`. Read without that check, the
 * signed body of an order's `orders/create` (the same Order, `cancelled_at` null; custom's Order with
 * its `lines`), sent again under the topic `orders/cancelled` and a new webhook id, cancelled the
 * order at every supplier: anyone who ever saw one delivery's bytes and signature (a second endpoint
 * the storefront's app posts the same webhooks to, a proxy's log) could cancel that order.
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { ANVIL, createShop } from './support/cancellations.ts';
import { queryRows } from './support/database.ts';
import { test as it } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH, postRawWebhook, uniqueSuffix } from './support/webhooks.ts';

let nextOrderId = 9_310_000;

describe('a signed order body sent again under a cancellation topic', () => {
  it.for(['platform_a', 'custom'] as const)('from a %s storefront is ignored: nothing is cancelled at the supplier', async (platform: Platform, { service, api, sandbox }) => {
    const shop = await createShop(api, platform, 'custom');
    const id = platform === 'custom' ? `ord_${nextOrderId++}` : nextOrderId++;
    const order = sandbox.buildOrderPayload(platform, { id, lines: [ANVIL] });
    sandbox.seedOrder(shop.reseller.shopDomain, platform, order);
    // The exact bytes and signature of the storefront's orders/create delivery.
    const body = JSON.stringify(order);
    const delivery = { body, secret: shop.reseller.secret, shopDomain: shop.reseller.shopDomain };
    const created = await postRawWebhook(service.url, ORDERS_PATH, { ...delivery, topic: 'orders/create', webhookId: `create-${uniqueSuffix()}` });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const [jobId] = (created.body as { syncJobIds: string[] }).syncJobIds;
    const job = await waitFor(async () => {
      const response = await api.get(`/v1/sync_jobs/${jobId}`, { token: shop.user.token });
      return response.body.status === 'completed' ? response.body : null;
    }, 15_000, 'the order to be placed');

    const replayed = await postRawWebhook(service.url, ORDERS_PATH, { ...delivery, topic: 'orders/cancelled', webhookId: `replay-${uniqueSuffix()}` });
    expect({ status: replayed.status, body: replayed.body }).toMatchObject({ status: 200, body: { received: true, ignored: true } });

    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = await api.get(`/v1/sync_jobs/${jobId}`, { token: shop.user.token });
    expect(after.body.cancellations).toEqual([]);
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, 'custom', job.sourceOrderId) as { status: string; lines: { cancelledQuantity: number }[] };
    expect(supplierOrder.status).toBe('open');
    expect(supplierOrder.lines.map((line) => line.cancelledQuantity)).toEqual([0]);
    const audit = await queryRows<{ action: string }>(service.databaseUrl, 'select action from audit_entries where reseller_store_id = $1', [shop.reseller.id]);
    expect(audit.map((entry) => entry.action)).not.toContain('order.cancelled');
  });

  it.for(['platform_a', 'custom'] as const)("from a %s supplier is ignored: the job is not marked cancelled by the supplier", async (platform: Platform, { service, api, sandbox }) => {
    const shop = await createShop(api, 'platform_a', platform);
    const id = nextOrderId++;
    const order = sandbox.buildOrderPayload('platform_a', { id, lines: [ANVIL] });
    sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', order);
    const created = await postRawWebhook(service.url, ORDERS_PATH, { body: JSON.stringify(order), secret: shop.reseller.secret, shopDomain: shop.reseller.shopDomain, topic: 'orders/create' });
    const [jobId] = (created.body as { syncJobIds: string[] }).syncJobIds;
    const job = await waitFor(async () => {
      const response = await api.get(`/v1/sync_jobs/${jobId}`, { token: shop.user.token });
      return response.body.status === 'completed' ? response.body : null;
    }, 15_000, 'the order to be placed');

    // The supplier's own Order as it sent it when the order was created (not cancelled), under the cancellation topic.
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, platform, job.sourceOrderId);
    const replayed = await postRawWebhook(service.url, FULFILLMENTS_PATH, {
      body: JSON.stringify(supplierOrder),
      secret: shop.acme.secret,
      shopDomain: shop.acme.shopDomain,
      topic: 'orders/cancelled',
    });
    expect({ status: replayed.status, body: replayed.body }).toMatchObject({ status: 200, body: { received: true, ignored: true } });
    const after = await api.get(`/v1/sync_jobs/${jobId}`, { token: shop.user.token });
    expect(after.body.supplierCancelledAt).toBeNull();
  });
});

describe('a signed platform_a refund sent again under another webhook id', () => {
  it('is the same refund: its lines are cancelled once, never again', async ({ service, api, sandbox }) => {
    const shop = await createShop(api, 'platform_a', 'custom');
    const id = nextOrderId++;
    const order = sandbox.buildOrderPayload('platform_a', { id, lines: [ANVIL] }) as Record<string, any>;
    sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', order);
    const created = await postRawWebhook(service.url, ORDERS_PATH, { body: JSON.stringify(order), secret: shop.reseller.secret, shopDomain: shop.reseller.shopDomain, topic: 'orders/create' });
    const [jobId] = (created.body as { syncJobIds: string[] }).syncJobIds;
    const job = await waitFor(async () => {
      const response = await api.get(`/v1/sync_jobs/${jobId}`, { token: shop.user.token });
      return response.body.status === 'completed' ? response.body : null;
    }, 15_000, 'the order to be placed');

    // The customer is refunded one of the two anvils, cancelled before shipping.
    const line = order.line_items[0];
    const refund = { id: nextOrderId++, order_id: order.id, created_at: new Date().toISOString(), note: null, transactions: [],
      refund_line_items: [{ id: nextOrderId++, line_item_id: line.id, quantity: 1, restock_type: 'cancel', line_item: line }] };
    const delivery = { body: JSON.stringify(refund), secret: shop.reseller.secret, shopDomain: shop.reseller.shopDomain, topic: 'refunds/create' };
    const first = await postRawWebhook(service.url, ORDERS_PATH, { ...delivery, webhookId: `refund-${uniqueSuffix()}` });
    expect(first.body).toMatchObject({ received: true, syncJobIds: [jobId] });
    const cancelledOnce = async () => {
      const response = await api.get(`/v1/sync_jobs/${jobId}`, { token: shop.user.token });
      return response.body.cancellations.length >= 1 && response.body.cancellations.every((c: any) => c.status === 'completed') ? response.body : null;
    };
    await waitFor(cancelledOnce, 15_000, 'the refunded anvil cancelled at the supplier');

    // The same signed bytes again, under a webhook id of their own.
    const replayed = await postRawWebhook(service.url, ORDERS_PATH, { ...delivery, webhookId: `replay-${uniqueSuffix()}` });
    expect(replayed.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const after = await waitFor(cancelledOnce, 15_000, 'the cancellations to settle');
    expect(after.cancellations.map((c: any) => c.lines)).toEqual([[{ sku: 'A-1', quantity: 1 }]]);
    const supplierOrder = sandbox.orderOf(shop.acme.shopDomain, 'custom', job.sourceOrderId) as { lines: { sku: string; cancelledQuantity: number }[] };
    expect(supplierOrder.lines.map((l) => [l.sku, l.cancelledQuantity])).toEqual([['A-1', 1]]);
  });
});
