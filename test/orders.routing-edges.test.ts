/**
 * Review 8: routing and money, through the real service, queue and sandbox platform.
 *
 * - Vendor matching is "exact after trimming, case-insensitive" and Unicode-aware (decisions.md):
 *   the capital sharp s 'ẞ' (U+1E9E, how German writes 'ß' in capitals) is the same letter as 'ß' and
 *   'SS' case-insensitively (Unicode case folding maps all three to 'ss').
 * - A line sold by its exact total (platform_b) whose priced total is negative must never reach a
 *   supplier, even when its unit price rounds to 0.
 * - A manual job reads the storefront order from its platform: an order the storefront shows
 *   cancelled is never placed on the supplier.
 */
import { describe, expect } from 'vitest';
import type { JsonObject } from './sandbox/server.ts';
import { sendWebhook } from './sandbox/server.ts';
import { test as it } from './support/fixtures.ts';
import { addSupplier, createJob, lineOf, openShop, orderPosts, seedResellerOrder, settled, type Shop } from './support/sync-jobs.ts';
import { ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';
import { createResellerStore, registerUser } from './support/factories.ts';
import type { ApiClient } from './support/api.ts';
import type { Sandbox } from './sandbox/server.ts';

let nextOrderId = 880_000 + Math.floor(Math.random() * 10_000) * 10;

interface WebhookShop extends Shop {
  secret: string;
}

async function webhookShop(api: ApiClient, platform: 'platform_a' | 'platform_b' | 'custom'): Promise<WebhookShop> {
  const user = await registerUser(api);
  const secret = `whsec_reseller_${uniqueSuffix()}`;
  const reseller = await createResellerStore(api, user.token, { platform, webhookSecret: secret });
  return { user, reseller, secret };
}

async function deliver(serviceUrl: string, shop: WebhookShop, payload: JsonObject): Promise<string[]> {
  const response = await sendWebhook({ targetUrl: `${serviceUrl}${ORDERS_PATH}`, shopDomain: shop.reseller.shopDomain, secret: shop.secret, topic: 'orders/create', payload });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return (response.body as { syncJobIds: string[] }).syncJobIds;
}

function orderPayload(sandbox: Sandbox, shop: WebhookShop, lines: Parameters<Sandbox['buildOrderPayload']>[1]['lines']): JsonObject {
  const platform = shop.reseller.platform as 'platform_a' | 'platform_b' | 'custom';
  const id = nextOrderId++;
  const payload = sandbox.buildOrderPayload(platform, { id: platform === 'custom' ? String(id) : id, lines });
  sandbox.seedOrder(shop.reseller.shopDomain, platform, payload);
  return payload;
}

describe('vendor matching, Unicode case-insensitively', () => {
  it('routes a line whose vendor is written with the capital sharp s (ẞ) to the supplier tagged with ß', async ({ service, api, sandbox }) => {
    const shop = await webhookShop(api, 'platform_a');
    const supplier = await addSupplier(api, shop, { vendorTag: 'Großhandel', pricingConfig: { type: 'percentage', value: 0 } });
    const payload = orderPayload(sandbox, shop, [
      { sku: 'G-1', title: 'Capitals', vendor: 'GROẞHANDEL', quantity: 1, price: '4.00' },
      { sku: 'G-2', title: 'As tagged', vendor: 'großhandel', quantity: 1, price: '5.00' },
      { sku: 'G-3', title: 'Spelt out', vendor: 'GROSSHANDEL', quantity: 1, price: '6.00' },
    ]);

    const [jobId, ...others] = await deliver(service.url, shop, payload);
    expect(others).toEqual([]);
    expect(await settled(api, shop.user.token, jobId!)).toMatchObject({ status: 'completed' });
    // Every line of the supplier in its one order: none left unmatched.
    expect(sandbox.ordersFor(supplier.shopDomain).map((order) => (order.body as { lines: { sku: string }[] }).lines.map((line) => line.sku))).toEqual([['G-1', 'G-2', 'G-3']]);
  });

  it('refuses a second supplier whose tag differs from an active one only by ẞ against ß (409 vendor_tag_taken)', async ({ api }) => {
    const shop = await openShop(api);
    await addSupplier(api, shop, { vendorTag: 'Straße' });
    const response = await api.post(`/v1/reseller_stores/${shop.reseller.id}/source_stores`, {
      token: shop.user.token,
      body: {
        name: 'Twin',
        platform: 'custom',
        shopDomain: `twin-${uniqueSuffix()}.example.com`,
        accessToken: `sup_${uniqueSuffix()}${uniqueSuffix()}`,
        webhookSecret: `whsec_${uniqueSuffix()}${uniqueSuffix()}`,
        vendorTag: 'STRAẞE',
        pricingMode: 'percentage',
        pricingConfig: { type: 'percentage', value: 0 },
      },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(409);
    expect(response.body.error.details).toMatchObject({ reason: 'vendor_tag_taken' });
  });
});

describe('a line priced by its total (platform_b) that pricing makes negative', () => {
  it('is never sent, even when its unit price rounds to 0: the job fails with the reason', async ({ service, api, sandbox }) => {
    const shop = await webhookShop(api, 'platform_b');
    // One cent off every item: 5 items sold for 0.03 in all come to -0.02.
    const supplier = await addSupplier(api, shop, {
      platform: 'platform_b',
      vendorTag: 'Tiny',
      pricingMode: 'field_rules',
      pricingConfig: { type: 'field_rules', rules: [{ field: 'price', op: 'add', value: -1 }] },
    });
    const payload = orderPayload(sandbox, shop, [{ sku: 'T-5', title: 'Five stickers', vendor: 'Tiny', quantity: 5, price: '0.01' }]);
    Object.assign((payload.line_items as JsonObject[])[0]!, { total: '0.03', price: 0.006 });

    const [jobId] = await deliver(service.url, shop, payload);
    const job = await settled(api, shop.user.token, jobId!);
    // Nothing asked of the supplier (the sandbox refuses a negative total with a 422; a platform may not).
    expect(orderPosts(sandbox, supplier.shopDomain), `a supplier order with a negative line total: ${job.errorMessage}`).toEqual([]);
    expect(job).toMatchObject({ status: 'dead', sourceOrderId: null });
    expect(job.errorMessage).toMatch(/negative/);
  });
});

describe('a manual job for an order the storefront shows cancelled', () => {
  it.for(['platform_a', 'platform_b', 'custom'] as const)('%s: places nothing on the supplier', async (platform, { api, sandbox }) => {
    const shop = await openShop(api, { platform });
    const supplier = await addSupplier(api, shop, { vendorTag: 'Acme' });
    // The order's webhooks never reached the service (lost, or before the store was connected).
    const orderId = seedResellerOrder(sandbox, shop, [lineOf('Acme')]);
    sandbox.cancelOrder(shop.reseller.shopDomain, platform, platform === 'custom' ? orderId : Number(orderId));

    const created = await createJob(api, shop.user.token, supplier.id, orderId);
    const job = await settled(api, shop.user.token, created.id);
    expect(orderPosts(sandbox, supplier.shopDomain), 'a supplier order for a cancelled storefront order').toEqual([]);
    expect(job.sourceOrderId).toBeNull();
    expect(job.errorMessage).toMatch(/cancelled/);
  });
});
