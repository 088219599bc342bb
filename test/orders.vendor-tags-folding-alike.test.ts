/**
 * Vendor tags stored before the current fold (NFKC, the capital sharp s 'ẞ' as 'ß' as 'ss'): two
 * active suppliers of one reseller store could be accepted with tags that now fold alike ('Straße'
 * and 'STRAẞE' were keyed 'strasse' and 'straße'). decisions.md: `vendorTag` is unique among a reseller
 * store's active source stores, and matching is case-insensitive.
 *
 * - A line both of them match is placed on neither (never twice): it is reported like a line no
 *   supplier matched (`order.lines_unmatched`, `order.unmatched`), naming the suppliers that share it.
 * - A new supplier whose tag folds like an active one's is refused (409 vendor_tag_taken), whatever
 *   key the older one was stored under.
 *
 * The older stores are made as a service before the fold fixes left them: created through the API,
 * then given the tag and key of that time (the migration that recomputes keys keeps a stale key on
 * the second of two such stores, as the unique index allows one store per key).
 */
import { describe, expect } from 'vitest';
import type { JsonObject, Sandbox } from './sandbox/server.ts';
import { sendWebhook } from './sandbox/server.ts';
import { test as it } from './support/fixtures.ts';
import { queryRows } from './support/database.ts';
import { addSupplier, auditOf, orderPosts, settled, type Shop } from './support/sync-jobs.ts';
import { ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';
import { createResellerStore, registerUser } from './support/factories.ts';
import type { ApiClient } from './support/api.ts';

let nextOrderId = 940_000 + Math.floor(Math.random() * 10_000) * 10;

interface WebhookShop extends Shop {
  secret: string;
}

async function webhookShop(api: ApiClient): Promise<WebhookShop> {
  const user = await registerUser(api);
  const secret = `whsec_reseller_${uniqueSuffix()}`;
  const reseller = await createResellerStore(api, user.token, { platform: 'platform_a', webhookSecret: secret });
  return { user, reseller, secret };
}

/** What an older service stored: the tag as given, the key by one upper-then-lower round (no NFKC). */
async function storedByOldFold(databaseUrl: string, sourceStoreId: string, vendorTag: string): Promise<void> {
  await queryRows(databaseUrl, 'update source_stores set vendor_tag = $2, vendor_key = $3 where id = $1', [sourceStoreId, vendorTag, vendorTag.toUpperCase().toLowerCase().trim()]);
}

function supplierBody(vendorTag: string): Record<string, unknown> {
  return {
    name: 'Twin',
    platform: 'custom',
    shopDomain: `twin-${uniqueSuffix()}.example.com`,
    accessToken: `sup_${uniqueSuffix()}${uniqueSuffix()}`,
    webhookSecret: `whsec_${uniqueSuffix()}${uniqueSuffix()}`,
    vendorTag,
    pricingMode: 'percentage',
    pricingConfig: { type: 'percentage', value: 0 },
  };
}

describe('two active suppliers whose stored tags fold alike', () => {
  it('a line both match is placed on neither and reported unmatched with the suppliers sharing it', async ({ service, api, sandbox }) => {
    const shop = await webhookShop(api);
    const first = await addSupplier(api, shop, { vendorTag: 'Straße', pricingConfig: { type: 'percentage', value: 0 } });
    const second = await addSupplier(api, shop, { vendorTag: 'Placeholder', pricingConfig: { type: 'percentage', value: 0 } });
    const other = await addSupplier(api, shop, { vendorTag: 'Kiosk', pricingConfig: { type: 'percentage', value: 0 } });
    await storedByOldFold(service.databaseUrl, second.id, 'STRAẞE');

    const id = nextOrderId++;
    const payload = sandbox.buildOrderPayload('platform_a', {
      id,
      lines: [
        { sku: 'S-1', title: 'Shared', vendor: 'Strasse', quantity: 1, price: '4.00' },
        { sku: 'K-1', title: 'Kiosk item', vendor: 'Kiosk', quantity: 1, price: '5.00' },
      ],
    });
    sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', payload);
    const response = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: shop.reseller.shopDomain, secret: shop.secret, topic: 'orders/create', payload: payload as JsonObject });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const jobIds = (response.body as { syncJobIds: string[] }).syncJobIds;

    // The other supplier's line still goes, alone.
    expect(jobIds).toHaveLength(1);
    expect(await settled(api, shop.user.token, jobIds[0]!)).toMatchObject({ status: 'completed', sourceStoreId: other.id });
    const skusOn = (s: Sandbox, domain: string) => s.ordersFor(domain).map((order) => (order.body as { lines: { sku: string }[] }).lines.map((line) => line.sku));
    expect(skusOn(sandbox, other.shopDomain)).toEqual([['K-1']]);
    // The shared line on neither supplier (before the fix: on both, one order each).
    expect(orderPosts(sandbox, first.shopDomain)).toEqual([]);
    expect(orderPosts(sandbox, second.shopDomain)).toEqual([]);

    // The reseller is told: the line is unmatched, and the audit entry names the suppliers sharing it.
    const entries = await auditOf(api, shop.user.token, String(id));
    const unmatched = entries.filter((entry) => entry.action === 'order.lines_unmatched');
    expect(unmatched).toHaveLength(1);
    expect(unmatched[0].metadata.lines).toEqual([{ sku: 'S-1', title: 'Shared', vendor: 'Strasse', quantity: 1 }]);
    expect(unmatched[0].metadata.ambiguous).toEqual([{ vendor: 'Strasse', sourceStoreIds: [first.id, second.id].sort() }]);
    const events = await api.get(`/v1/events?type=order.unmatched&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(events.status).toBe(200);
    expect(events.body.data.map((event: any) => event.data.object)).toEqual([
      { resellerStoreId: shop.reseller.id, externalOrderId: String(id), lines: [{ sku: 'S-1', title: 'Shared', vendor: 'Strasse', quantity: 1 }] },
    ]);
  });

  it('refuses a new supplier whose tag folds like an active one stored under the old key (409 vendor_tag_taken)', async ({ service, api }) => {
    const shop = await webhookShop(api);
    const older = await addSupplier(api, shop, { vendorTag: 'Placeholder' });
    // Keyed 'straße' by the old fold; 'Strasse' is keyed 'strasse' today.
    await storedByOldFold(service.databaseUrl, older.id, 'STRAẞE');

    const response = await api.post(`/v1/reseller_stores/${shop.reseller.id}/source_stores`, { token: shop.user.token, body: supplierBody('Strasse') });
    expect(response.status, JSON.stringify(response.body)).toBe(409);
    expect(response.body.error.details).toMatchObject({ reason: 'vendor_tag_taken' });

    // A tag folding otherwise is still accepted.
    const distinct = await api.post(`/v1/reseller_stores/${shop.reseller.id}/source_stores`, { token: shop.user.token, body: supplierBody('Strassen') });
    expect(distinct.status, JSON.stringify(distinct.body)).toBe(201);
  });
});
