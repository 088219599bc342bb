/**
 * orders/create webhooks end to end: real HTTP into the service, real database and queue, and the
 * sandbox platform receiving the supplier orders. No mocks; asynchronous effects are polled.
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { SAMPLE_ADDRESS, sendWebhook, type JsonObject, type OrderLineInput, type Sandbox } from './sandbox/server.ts';
import { expectError, withoutRequestId } from './support/assertions.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import type { TestService } from './support/service.ts';
import { waitFor } from './support/wait.ts';
import {
  ORDERS_PATH,
  postRawWebhook,
  queueMessageCount,
  syncJobRows,
  uniqueSuffix,
  webhookAuditRows,
} from './support/webhooks.ts';

let nextOrderId = 710_000;

interface Reseller {
  user: TestUser;
  store: { id: string; shopDomain: string; platform: Platform };
  secret: string;
}

const it = test
  /** A new user with a reseller store on `platform`, signing its webhooks with a secret of its own. */
  .extend('newReseller', { scope: 'file' }, ({ api }) => async (platform: Platform = 'platform_a'): Promise<Reseller> => {
    const user = await registerUser(api);
    const secret = `whsec_reseller_${uniqueSuffix()}`;
    const store = await createResellerStore(api, user.token, { platform, webhookSecret: secret });
    return { user, store, secret };
  })
  .extend('addSupplier', { scope: 'file' }, ({ api }) => (reseller: Reseller, overrides: Record<string, unknown>) =>
    createSourceStore(api, reseller.user.token, reseller.store.id, overrides))
  /** The reseller platform's order object, also seeded on the sandbox as the platform would hold it. */
  .extend('resellerOrder', { scope: 'file' }, ({ sandbox }) =>
    (reseller: Reseller, lines: OrderLineInput[], extra: { id?: number | string; currency?: string; email?: string } = {}) => {
      const id = extra.id ?? nextOrderId++;
      const payload = sandbox.buildOrderPayload(reseller.store.platform, { id, lines, email: extra.email ?? 'ada@example.com', ...(extra.currency && { currency: extra.currency }) });
      sandbox.seedOrder(reseller.store.shopDomain, reseller.store.platform, payload);
      return payload;
    })
  .extend('deliverOrder', { scope: 'file' }, ({ service }) => (reseller: Reseller, payload: unknown, webhookId?: string) =>
    sendWebhook({
      targetUrl: `${service.url}${ORDERS_PATH}`,
      shopDomain: reseller.store.shopDomain,
      secret: reseller.secret,
      topic: 'orders/create',
      payload,
      ...(webhookId !== undefined && { webhookId }),
    }))
  .extend('jobOf', { scope: 'file' }, ({ api }) => async (reseller: Reseller, id: string) => {
    const response = await api.get(`/v1/sync_jobs/${id}`, { token: reseller.user.token });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body;
  })
  /** Waits until every job of the reseller's order is completed (fails fast when one dies). */
  .extend('waitForCompleted', { scope: 'file' }, ({ jobOf }) => (reseller: Reseller, ids: string[]) =>
    waitFor(async () => {
      const jobs = await Promise.all(ids.map((id) => jobOf(reseller, id)));
      const dead = jobs.find((job) => job.status === 'dead');
      if (dead) throw new Error(`job ${dead.id} died: ${dead.errorMessage}`);
      return jobs.every((job) => job.status === 'completed') ? jobs : null;
    }, 15_000, 'sync jobs to complete'));

function expectReceived(response: { status: number; body: unknown }, jobCount: number): string[] {
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  const body = response.body as { received: boolean; syncJobIds: string[]; request_id: string };
  expect(Object.keys(body).sort()).toEqual(['received', 'request_id', 'syncJobIds']);
  expect(body.received).toBe(true);
  expect(body.request_id).toMatch(/.+/);
  expect(body.syncJobIds).toHaveLength(jobCount);
  for (const id of body.syncJobIds) expect(id).toMatch(/^job_/);
  expect(new Set(body.syncJobIds).size).toBe(jobCount);
  return body.syncJobIds;
}

const sorted = (ids: string[]) => [...ids].sort();

/** `text` with `pattern` replaced; fails when there was nothing to replace. */
function replaced(text: string, pattern: RegExp, replacement: string): string {
  expect(text).toMatch(pattern);
  return text.replace(pattern, replacement);
}

describe('routing', () => {
  it('splits one order over three suppliers on three platforms, each priced and referenced its own way', async ({ service, sandbox, newReseller, addSupplier, resellerOrder, deliverOrder, waitForCompleted }) => {
    const reseller = await newReseller('platform_a');
    const acme = await addSupplier(reseller, {
      platform: 'platform_a',
      vendorTag: 'Acme Tools',
      pricingMode: 'percentage',
      pricingConfig: { type: 'percentage', value: 25 },
    });
    const bolt = await addSupplier(reseller, {
      platform: 'platform_b',
      vendorTag: 'Bolt Co',
      pricingMode: 'field_rules',
      pricingConfig: {
        type: 'field_rules',
        rules: [
          { field: 'price', op: 'multiply', value: 0.8 },
          { field: 'price', op: 'add', value: -50 },
          { field: 'sku', op: 'prefix', value: 'BC-' },
          { field: 'title', op: 'suffix', value: ' (wholesale)' },
        ],
      },
    });
    const cog = await addSupplier(reseller, {
      platform: 'custom',
      vendorTag: 'Cog Works',
      pricingMode: 'percentage',
      pricingConfig: { type: 'percentage', value: 12.5 },
    });
    const payload = resellerOrder(reseller, [
      { sku: 'A-1', title: 'Anvil', vendor: 'Acme Tools', quantity: 2, price: '12.50' },
      { sku: 'B-1', title: 'Bolt', vendor: 'Bolt Co', quantity: 3, price: '7.50' },
      { sku: 'C-1', title: 'Cog', vendor: 'Cog Works', quantity: 4, price: '10.00' },
      { sku: 'A-2', title: 'Hammer', vendor: 'Acme Tools', quantity: 1, price: '19.99' },
      { sku: 'B-2', title: 'Nut', vendor: 'Bolt Co', quantity: 7, price: '0.99' },
    ]);

    const startedAt = performance.now();
    const response = await deliverOrder(reseller, payload);
    const elapsedMs = performance.now() - startedAt;
    const ids = expectReceived(response, 3);
    // A sanity bound only (platforms give up after 5 s); speed targets belong in the benchmark.
    expect(elapsedMs).toBeLessThan(2_000);

    const rows = await syncJobRows(service.databaseUrl, reseller.store.id);
    expect(sorted(rows.map((row) => row.id))).toEqual(sorted(ids));
    expect(sorted(rows.map((row) => row.source_store_id))).toEqual(sorted([acme.id, bolt.id, cog.id]));
    expect(rows.every((row) => row.external_order_id === String(payload.id))).toBe(true);
    const jobFor = (sourceStoreId: string) => rows.find((row) => row.source_store_id === sourceStoreId)!.id;

    const jobs = await waitForCompleted(reseller, ids);
    for (const job of jobs) {
      expect(job).toMatchObject({ resellerStoreId: reseller.store.id, externalOrderId: String(payload.id), attempts: 1, errorMessage: null });
    }

    // platform_a: unit `price`, our reference in note_attributes.
    const [acmeOrder, ...moreAcme] = sandbox.ordersFor(acme.shopDomain);
    expect(moreAcme).toHaveLength(0);
    expect(acmeOrder!.platform).toBe('platform_a');
    expect(acmeOrder!.idempotencyKey).toBe(`sync-job:${jobFor(acme.id)}`);
    const acmeBody = (acmeOrder!.body as { order: JsonObject }).order;
    expect(acmeBody.line_items).toEqual([
      { sku: 'A-1', title: 'Anvil', quantity: 2, price: '10.00' },
      { sku: 'A-2', title: 'Hammer', quantity: 1, price: '15.99' },
    ]);
    expect(acmeBody.note_attributes).toEqual(
      expect.arrayContaining([
        { name: 'sync_reference', value: jobFor(acme.id) },
        { name: 'reseller_order_id', value: String(payload.id) },
      ]),
    );
    expect(acmeBody).toMatchObject({ currency: 'USD', email: 'ada@example.com', shipping_address: { name: SAMPLE_ADDRESS.name, zip: SAMPLE_ADDRESS.zip } });

    // platform_b: line `total` = unit × quantity, our reference in meta_data.
    const [boltOrder, ...moreBolt] = sandbox.ordersFor(bolt.shopDomain);
    expect(moreBolt).toHaveLength(0);
    expect(boltOrder!.platform).toBe('platform_b');
    const boltBody = boltOrder!.body as JsonObject;
    expect(boltBody.line_items).toEqual([
      // 7.50 × 0.8 − 0.50 = 5.50; × 3
      { sku: 'BC-B-1', name: 'Bolt (wholesale)', quantity: 3, total: '16.50' },
      // 0.99 × 0.8 = 0.792 → 0.79; − 0.50 = 0.29; × 7
      { sku: 'BC-B-2', name: 'Nut (wholesale)', quantity: 7, total: '2.03' },
    ]);
    expect(boltBody.meta_data).toEqual(
      expect.arrayContaining([
        { key: 'sync_reference', value: jobFor(bolt.id) },
        { key: 'reseller_order_id', value: String(payload.id) },
      ]),
    );
    expect(boltBody).toMatchObject({ currency: 'USD', billing: { email: 'ada@example.com' }, shipping: { first_name: 'Ada', last_name: 'Lovelace' } });

    // custom: `unitPrice`, `reference` = the job id.
    const [cogOrder, ...moreCog] = sandbox.ordersFor(cog.shopDomain);
    expect(moreCog).toHaveLength(0);
    expect(cogOrder!.platform).toBe('custom');
    expect(cogOrder!.body).toEqual({
      reference: jobFor(cog.id),
      currency: 'USD',
      // 10.00 / 1.125 = 8.888… → 8.89
      lines: [{ sku: 'C-1', title: 'Cog', quantity: 4, unitPrice: '8.89' }],
      shippingAddress: SAMPLE_ADDRESS,
      email: 'ada@example.com',
    });

    // Each job records the order it placed.
    const byId = new Map(jobs.map((job) => [job.id, job]));
    expect(byId.get(jobFor(acme.id)).sourceOrderId).toBe(String(acmeOrder!.id));
    expect(byId.get(jobFor(bolt.id)).sourceOrderId).toBe(String(boltOrder!.id));
    expect(byId.get(jobFor(cog.id)).sourceOrderId).toBe(String(cogOrder!.id));

    // sync_job.created is audited per job, saying it came from the webhook; nothing was unmatched.
    const audit = await webhookAuditRows(service.databaseUrl, reseller.store.id);
    const created = audit.filter((entry) => entry.action === 'sync_job.created');
    expect(sorted(created.map((entry) => entry.resource_id))).toEqual(sorted(ids));
    for (const entry of created) expect(entry.metadata).toMatchObject({ origin: 'webhook', webhookId: response.webhookId });
    expect(audit.filter((entry) => entry.action === 'order.lines_unmatched')).toEqual([]);
  });

  it('routes a platform_b reseller order, whose line vendors are meta_data entries', async ({ service, sandbox, newReseller, addSupplier, resellerOrder, deliverOrder, waitForCompleted }) => {
    const reseller = await newReseller('platform_b');
    const cog = await addSupplier(reseller, { platform: 'custom', vendorTag: 'Cog Works', pricingConfig: { type: 'percentage', value: 100 } });
    const acme = await addSupplier(reseller, {
      platform: 'platform_a',
      vendorTag: 'Acme Tools',
      pricingMode: 'field_rules',
      pricingConfig: { type: 'field_rules', rules: [{ field: 'price', op: 'set', value: 500 }] },
    });
    const payload = resellerOrder(reseller, [
      { sku: 'C-1', title: 'Cog', vendor: 'Cog Works', quantity: 3, price: '19.99' },
      { sku: 'A-1', title: 'Anvil', vendor: 'acme tools', quantity: 2, price: '42.00' },
      { sku: 'Z-1', title: 'Zip', vendor: 'Nobody', quantity: 1, price: '1.00' },
    ]);
    // The platform's own shape: no `vendor` field on the line, a meta entry instead; float `price`, string `total`.
    const lines = payload.line_items as JsonObject[];
    expect(lines[0]).not.toHaveProperty('vendor');
    expect(lines[0]).toMatchObject({ price: 19.99, total: '59.97', meta_data: [{ key: 'vendor', value: 'Cog Works' }] });

    const ids = expectReceived(await deliverOrder(reseller, payload), 2);
    await waitForCompleted(reseller, ids);
    const rows = await syncJobRows(service.databaseUrl, reseller.store.id);
    const jobFor = (sourceStoreId: string) => rows.find((row) => row.source_store_id === sourceStoreId)!.id;

    const cogOrders = sandbox.ordersFor(cog.shopDomain);
    expect(cogOrders).toHaveLength(1);
    // 19.99 / 2 = 9.995 → 10.00 (half away from zero)
    expect(cogOrders[0]!.body).toMatchObject({ reference: jobFor(cog.id), lines: [{ sku: 'C-1', title: 'Cog', quantity: 3, unitPrice: '10.00' }] });
    const acmeOrders = sandbox.ordersFor(acme.shopDomain);
    expect(acmeOrders).toHaveLength(1);
    expect((acmeOrders[0]!.body as { order: JsonObject }).order).toMatchObject({
      line_items: [{ sku: 'A-1', title: 'Anvil', quantity: 2, price: '5.00' }],
      note_attributes: expect.arrayContaining([{ name: 'sync_reference', value: jobFor(acme.id) }]),
    });
  });

  it('prices a platform_b line from its exact total, not from the float price or a rounded unit price', async ({ sandbox, newReseller, addSupplier, resellerOrder, deliverOrder, waitForCompleted }) => {
    const reseller = await newReseller('platform_b');
    const bolt = await addSupplier(reseller, { platform: 'platform_b', vendorTag: 'Bolt Co', pricingConfig: { type: 'percentage', value: 0 } });
    const acme = await addSupplier(reseller, { platform: 'platform_a', vendorTag: 'Acme', pricingConfig: { type: 'percentage', value: 0 } });
    const payload = resellerOrder(reseller, [
      { sku: 'B-3', title: 'Three for ten', vendor: 'Bolt Co', quantity: 3, price: '3.33' },
      { sku: 'B-1', title: 'Float price', vendor: 'Bolt Co', quantity: 1, price: '1.01' },
      { sku: 'A-3', title: 'Three for ten', vendor: 'Acme', quantity: 3, price: '3.33' },
    ]);
    const lines = payload.line_items as JsonObject[];
    // 10.00 for three without a price; a float price of 1.005 beside the exact "1.01".
    Object.assign(lines[0]!, { total: '10.00', price: undefined });
    Object.assign(lines[1]!, { total: '1.01', price: 1.005 });
    Object.assign(lines[2]!, { total: '10.00', price: undefined });
    await waitForCompleted(reseller, expectReceived(await deliverOrder(reseller, payload), 2));

    const [boltOrder] = sandbox.ordersFor(bolt.shopDomain);
    expect((boltOrder!.body as { line_items: unknown[] }).line_items).toEqual([
      { sku: 'B-3', name: 'Three for ten', quantity: 3, total: '10.00' },
      { sku: 'B-1', name: 'Float price', quantity: 1, total: '1.01' },
    ]);
    // A supplier that takes a unit price gets total ÷ quantity rounded to the minor unit.
    const [acmeOrder] = sandbox.ordersFor(acme.shopDomain);
    expect((acmeOrder!.body as { order: JsonObject }).order).toMatchObject({ line_items: [{ sku: 'A-3', quantity: 3, price: '3.33' }] });
  });

  it('routes a custom reseller order with a string id, in a currency without minor units', async ({ sandbox, newReseller, addSupplier, resellerOrder, deliverOrder, waitForCompleted }) => {
    const reseller = await newReseller('custom');
    const bolt = await addSupplier(reseller, { platform: 'platform_b', vendorTag: 'Bolt Co', pricingConfig: { type: 'percentage', value: 10 } });
    const orderId = `ord_${nextOrderId++}`;
    const payload = resellerOrder(
      reseller,
      [
        { sku: 'B-1', title: 'Bolt', vendor: 'Bolt Co', quantity: 2, price: '1000' },
        { sku: 'X-1', title: 'Other', vendor: 'Other', quantity: 1, price: '5' },
      ],
      { id: orderId, currency: 'JPY' },
    );
    expect(payload.id).toBe(orderId);

    const ids = expectReceived(await deliverOrder(reseller, payload), 1);
    const [job] = await waitForCompleted(reseller, ids);
    expect(job).toMatchObject({ externalOrderId: orderId, sourceStoreId: bolt.id });
    const orders = sandbox.ordersFor(bolt.shopDomain);
    expect(orders).toHaveLength(1);
    // 1000 / 1.1 = 909.09 → 909 yen; × 2
    expect(orders[0]!.body).toMatchObject({
      currency: 'JPY',
      line_items: [{ sku: 'B-1', name: 'Bolt', quantity: 2, total: '1818' }],
      meta_data: expect.arrayContaining([{ key: 'sync_reference', value: ids[0] }, { key: 'reseller_order_id', value: orderId }]),
    });
  });
});

describe('currencies', () => {
  // ISO 4217 minor units; Intl's locale data gives 0 decimals to PKR, HUF, COP and IQD, which
  // refused these orders ("more decimals than PKR allows").
  it.for([
    ['PKR', 2, '499.99', '399.99'],
    ['HUF', 2, '1990.50', '1592.40'],
    ['COP', 2, '10000.50', '8000.40'],
    ['IQD', 3, '12.345', '9.876'],
    ['KWD', 3, '1.250', '1.000'],
    ['CLP', 0, '1500', '1200'],
  ] as const)('routes an order in %s (%i decimals), priced exactly in its minor units', async ([currency, _decimals, price, supplierPrice], { sandbox, newReseller, addSupplier, resellerOrder, deliverOrder, waitForCompleted }) => {
    const reseller = await newReseller('platform_a');
    const supplier = await addSupplier(reseller, { platform: 'custom', vendorTag: 'Acme', pricingConfig: { type: 'percentage', value: 25 } });
    const payload = resellerOrder(reseller, [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 2, price }], { currency });
    expect((payload.line_items as JsonObject[])[0]!.price).toBe(price);
    await waitForCompleted(reseller, expectReceived(await deliverOrder(reseller, payload), 1));
    const [placed] = sandbox.ordersFor(supplier.shopDomain);
    expect(placed!.body).toMatchObject({ currency, lines: [{ sku: 'A-1', quantity: 2, unitPrice: supplierPrice }] });
  });
});

describe('quantities and amounts', () => {
  /** The order as JSON text with `line`'s quantity written as `quantity` (1e21 and 2^53 + 2 do not survive JSON.stringify as sent). */
  function withQuantity(payload: JsonObject, quantity: string): string {
    return replaced(JSON.stringify(payload), /"quantity":1,/, `"quantity":${quantity},`);
  }

  it.for([
    ['1e300', 'line_items.0.quantity'],
    ['1e21', 'line_items.0.quantity'],
    ['9007199254740994', 'line_items.0.quantity'],
    ['1000001', 'line_items.0.quantity'],
    ['2.5', 'line_items.0.quantity'],
  ] as const)('refuses the whole order with a line of quantity %s: 400 naming the field, the reason audited, nothing routed', async ([quantity, param], { service, api, sandbox, newReseller, addSupplier, resellerOrder }) => {
    const reseller = await newReseller('platform_b');
    const bolt = await addSupplier(reseller, { platform: 'platform_b', vendorTag: 'Bolt Co' });
    const payload = resellerOrder(reseller, [
      { sku: 'B-1', title: 'Bolt', vendor: 'Bolt Co', quantity: 1, price: '8.00' },
      { sku: 'B-2', title: 'Nut', vendor: 'Bolt Co', quantity: 2, price: '1.00' },
    ]);
    const body = withQuantity(payload, quantity);
    const response = await postRawWebhook(service.url, ORDERS_PATH, { body, secret: reseller.secret, shopDomain: reseller.store.shopDomain, topic: 'orders/create', webhookId: 'wh-big' });
    expectError(response, 400, 'validation_failed', param);

    expect(await syncJobRows(service.databaseUrl, reseller.store.id)).toEqual([]);
    const audit = await webhookAuditRows(service.databaseUrl, reseller.store.id);
    expect(audit).toEqual([
      { action: 'order.refused', resource_id: String(payload.id), metadata: { param, reason: response.body.error.message, webhookId: 'wh-big' } },
    ]);
    const entries = await api.get(`/v1/audit_log?action=order.refused&reseller_store_id=${reseller.store.id}`, { token: reseller.user.token });
    expect(entries.body.data).toHaveLength(1);
    expect(entries.body.data[0]).toMatchObject({ resourceType: 'order', resourceId: String(payload.id), actorId: 'system' });
    expect(sandbox.ordersFor(bolt.shopDomain)).toEqual([]);
  });

  it.for([
    ['platform_a', { price: '10000000000.01' }, 'line_items.0.price'],
    ['platform_a', { price: '100000000.00', quantity: 101 }, 'line_items.0.quantity'],
    ['platform_b', { total: '8e+3.02' }, 'line_items.0.total'],
    ['platform_b', { total: '10000000000000.00' }, 'line_items.0.total'],
    ['custom', { unitPrice: 1e300 }, 'lines.0.unitPrice'],
  ] as const)('refuses a %s order with an amount beyond the limit (%j)', async ([platform, fields, param], { service, newReseller, addSupplier, resellerOrder }) => {
    const reseller = await newReseller(platform);
    await addSupplier(reseller, { vendorTag: 'Acme' });
    const payload = resellerOrder(reseller, [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 1, price: '1.00' }]);
    Object.assign((payload[platform === 'custom' ? 'lines' : 'line_items'] as JsonObject[])[0]!, fields);
    const delivery = { body: JSON.stringify(payload), secret: reseller.secret, shopDomain: reseller.store.shopDomain, topic: 'orders/create' };
    expectError(await postRawWebhook(service.url, ORDERS_PATH, delivery), 400, 'validation_failed', param);
    expect(await syncJobRows(service.databaseUrl, reseller.store.id)).toEqual([]);
    expect((await webhookAuditRows(service.databaseUrl, reseller.store.id)).map((row) => [row.action, row.metadata.param])).toEqual([['order.refused', param]]);
  });

  it('routes a line of the largest quantity, 1,000,000', async ({ sandbox, newReseller, addSupplier, resellerOrder, deliverOrder, waitForCompleted }) => {
    const reseller = await newReseller('platform_a');
    const supplier = await addSupplier(reseller, { platform: 'platform_b', vendorTag: 'Acme', pricingConfig: { type: 'percentage', value: 0 } });
    const payload = resellerOrder(reseller, [{ sku: 'A-1', title: 'Washer', vendor: 'Acme', quantity: 1_000_000, price: '0.01' }]);
    await waitForCompleted(reseller, expectReceived(await deliverOrder(reseller, payload), 1));
    const [placed] = sandbox.ordersFor(supplier.shopDomain);
    expect((placed!.body as { line_items: unknown[] }).line_items).toEqual([{ sku: 'A-1', name: 'Washer', quantity: 1_000_000, total: '10000.00' }]);
  });
});

describe('vendor matching', () => {
  it('matches trimmed and case-insensitively, never a deleted store, and records unmatched lines once', async ({ service, api, sandbox, newReseller, addSupplier, resellerOrder, deliverOrder, waitForCompleted }) => {
    const reseller = await newReseller('platform_a');
    const acme = await addSupplier(reseller, { platform: 'custom', vendorTag: 'Acme Tools', pricingConfig: { type: 'percentage', value: 0 } });
    const gone = await addSupplier(reseller, { platform: 'custom', vendorTag: 'Gone Inc' });
    const deleted = await api.delete(`/v1/reseller_stores/${reseller.store.id}/source_stores/${gone.id}`, { token: reseller.user.token });
    expect(deleted.status).toBe(204);
    const retired = await addSupplier(reseller, { platform: 'custom', vendorTag: 'Retired' });
    expect((await api.delete(`/v1/reseller_stores/${reseller.store.id}/source_stores/${retired.id}`, { token: reseller.user.token })).status).toBe(204);
    // The deleted store's tag taken over by a new store: only the active one gets the line.
    const successor = await addSupplier(reseller, { platform: 'custom', vendorTag: 'retired ', pricingConfig: { type: 'percentage', value: 0 } });

    const payload = resellerOrder(reseller, [
      { sku: 'A-1', title: 'Anvil', vendor: '  acme TOOLS ', quantity: 1, price: '1.00' },
      { sku: 'A-2', title: 'Hammer', vendor: 'ACME TOOLS', quantity: 2, price: '2.00' },
      { sku: 'N-1', title: 'Near miss', vendor: 'Acme  Tools', quantity: 1, price: '3.00' },
      { sku: 'N-2', title: 'Prefix', vendor: 'Acme', quantity: 1, price: '4.00' },
      { sku: 'G-1', title: 'Ghost', vendor: 'Gone Inc', quantity: 5, price: '5.00' },
      { sku: 'R-1', title: 'Relic', vendor: 'RETIRED', quantity: 1, price: '6.00' },
      { sku: 'E-1', title: 'Nameless', vendor: '', quantity: 1, price: '7.00' },
    ]);
    const first = await deliverOrder(reseller, payload);
    const ids = expectReceived(first, 2);
    const rows = await syncJobRows(service.databaseUrl, reseller.store.id);
    expect(sorted(rows.map((row) => row.source_store_id))).toEqual(sorted([acme.id, successor.id]));

    const unmatchedEntries = async () => {
      const response = await api.get(`/v1/audit_log?action=order.lines_unmatched&reseller_store_id=${reseller.store.id}`, { token: reseller.user.token });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      return response.body.data;
    };
    const [entry, ...others] = await unmatchedEntries();
    expect(others).toHaveLength(0);
    expect(entry).toMatchObject({ resellerStoreId: reseller.store.id, resourceType: 'order', resourceId: String(payload.id), actorId: 'system' });
    expect(entry.metadata.lines).toEqual([
      { sku: 'N-1', title: 'Near miss', vendor: 'Acme  Tools', quantity: 1 },
      { sku: 'N-2', title: 'Prefix', vendor: 'Acme', quantity: 1 },
      { sku: 'G-1', title: 'Ghost', vendor: 'Gone Inc', quantity: 5 },
      { sku: 'E-1', title: 'Nameless', vendor: '', quantity: 1 },
    ]);

    // Redelivered, with the same and with a new webhook id: still one entry.
    expect(sorted(expectReceived(await deliverOrder(reseller, payload, first.webhookId), 2))).toEqual(sorted(ids));
    expect(sorted(expectReceived(await deliverOrder(reseller, payload), 2))).toEqual(sorted(ids));
    expect(await unmatchedEntries()).toHaveLength(1);

    await waitForCompleted(reseller, ids);
    expect(sandbox.ordersFor(gone.shopDomain)).toEqual([]);
    expect(sandbox.ordersFor(retired.shopDomain)).toEqual([]);
    expect(sandbox.ordersFor(acme.shopDomain).map((order) => order.body)).toMatchObject([
      { lines: [{ sku: 'A-1', quantity: 1, unitPrice: '1.00' }, { sku: 'A-2', quantity: 2, unitPrice: '2.00' }] },
    ]);
    expect(sandbox.ordersFor(successor.shopDomain).map((order) => order.body)).toMatchObject([{ lines: [{ sku: 'R-1', unitPrice: '6.00' }] }]);
  });

  it('acknowledges an order that matches no supplier with no job', async ({ service, sandbox, newReseller, addSupplier, resellerOrder, deliverOrder }) => {
    const reseller = await newReseller('platform_a');
    const acme = await addSupplier(reseller, { vendorTag: 'Acme Tools' });
    const payload = resellerOrder(reseller, [{ sku: 'Z-1', title: 'Zip', vendor: 'Nobody', quantity: 1, price: '1.00' }]);
    expectReceived(await deliverOrder(reseller, payload), 0);

    // A reseller without any source store: likewise.
    const lonely = await newReseller('platform_b');
    expectReceived(await deliverOrder(lonely, resellerOrder(lonely, [{ sku: 'Z-1', title: 'Zip', vendor: 'Acme Tools', quantity: 1, price: '1.00' }])), 0);

    for (const store of [reseller.store, lonely.store]) {
      expect(await syncJobRows(service.databaseUrl, store.id)).toEqual([]);
      const audit = await webhookAuditRows(service.databaseUrl, store.id);
      expect(audit.map((entry) => entry.action)).toEqual(['order.lines_unmatched']);
    }
    expect(sandbox.ordersFor(acme.shopDomain)).toEqual([]);
  });
});

describe('redeliveries', () => {
  it('answers a redelivery with the same jobs and places no second order', async ({ service, sandbox, newReseller, addSupplier, resellerOrder, deliverOrder, waitForCompleted }) => {
    const reseller = await newReseller('platform_a');
    const acme = await addSupplier(reseller, { platform: 'platform_a', vendorTag: 'Acme Tools' });
    const cog = await addSupplier(reseller, { platform: 'custom', vendorTag: 'Cog Works' });
    const payload = resellerOrder(reseller, [
      { sku: 'A-1', title: 'Anvil', vendor: 'Acme Tools', quantity: 1, price: '10.00' },
      { sku: 'C-1', title: 'Cog', vendor: 'Cog Works', quantity: 1, price: '10.00' },
    ]);

    const first = await deliverOrder(reseller, payload, `wh-${uniqueSuffix()}`);
    const ids = sorted(expectReceived(first, 2));
    // The same delivery again, the same order under a new webhook id, and re-serialised with another key order.
    expect(sorted(expectReceived(await deliverOrder(reseller, payload, first.webhookId), 2))).toEqual(ids);
    expect(sorted(expectReceived(await deliverOrder(reseller, payload), 2))).toEqual(ids);
    const reordered = Object.fromEntries(Object.entries(payload).reverse());
    expect(sorted(expectReceived(await deliverOrder(reseller, reordered), 2))).toEqual(ids);

    await waitForCompleted(reseller, ids);
    // After completion too.
    expect(sorted(expectReceived(await deliverOrder(reseller, payload, first.webhookId), 2))).toEqual(ids);

    const rows = await syncJobRows(service.databaseUrl, reseller.store.id);
    expect(rows.map((row) => row.id)).toEqual(ids);
    expect(rows.every((row) => row.status === 'completed' && row.attempts === 1)).toBe(true);
    // One queue message per job, ever: nothing is pending that could place a second order.
    expect(await queueMessageCount(service.databaseUrl, 'sync-job.process', ids)).toBe(2);
    const created = (await webhookAuditRows(service.databaseUrl, reseller.store.id)).filter((entry) => entry.action === 'sync_job.created');
    expect(created).toHaveLength(2);
    expect(sandbox.ordersFor(acme.shopDomain)).toHaveLength(1);
    expect(sandbox.ordersFor(cog.shopDomain)).toHaveLength(1);
  });

  it('makes exactly one job per supplier from 10 concurrent deliveries of one order', async ({ service, sandbox, newReseller, addSupplier, resellerOrder, deliverOrder, waitForCompleted }) => {
    const reseller = await newReseller('platform_a');
    const suppliers = await Promise.all(
      (['platform_a', 'platform_b', 'custom'] as const).map((platform, index) => addSupplier(reseller, { platform, vendorTag: `Maker ${index}` })),
    );
    const payload = resellerOrder(reseller, [
      ...suppliers.map((_, index) => ({ sku: `M-${index}`, title: `Item ${index}`, vendor: `Maker ${index}`, quantity: 1, price: '8.00' })),
      { sku: 'U-1', title: 'Unrouted', vendor: 'Nobody', quantity: 1, price: '1.00' },
    ]);
    const sharedId = `wh-${uniqueSuffix()}`;
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, index) => deliverOrder(reseller, payload, index % 2 === 0 ? sharedId : undefined)),
    );
    const ids = sorted(expectReceived(responses[0]!, 3));
    for (const response of responses) expect(sorted(expectReceived(response, 3))).toEqual(ids);

    const rows = await syncJobRows(service.databaseUrl, reseller.store.id);
    expect(rows.map((row) => row.id)).toEqual(ids);
    expect(await queueMessageCount(service.databaseUrl, 'sync-job.process', ids)).toBe(3);
    await waitForCompleted(reseller, ids);
    for (const supplier of suppliers) expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
    const audit = await webhookAuditRows(service.databaseUrl, reseller.store.id);
    expect(audit.filter((entry) => entry.action === 'sync_job.created')).toHaveLength(3);
    expect(audit.filter((entry) => entry.action === 'order.lines_unmatched')).toHaveLength(1);
  });
});

describe('orders arriving together (group commit)', () => {
  it('gives each of 40 concurrent orders of two resellers its own jobs, queue messages and audit entries', async ({ service, sandbox, newReseller, addSupplier, resellerOrder, deliverOrder }) => {
    const resellers = [await newReseller('platform_a'), await newReseller('platform_b')];
    const suppliers = await Promise.all(
      resellers.map(async (reseller) => ({
        left: await addSupplier(reseller, { platform: 'custom', vendorTag: 'Left' }),
        right: await addSupplier(reseller, { platform: 'platform_a', vendorTag: 'Right' }),
      })),
    );
    const orders = Array.from({ length: 40 }, (_, index) => {
      const reseller = resellers[index % 2]!;
      const bothSuppliers = index % 4 < 2;
      const lines = [
        { sku: 'L-1', title: 'Left item', vendor: 'Left', quantity: 1, price: '5.00' },
        ...(bothSuppliers ? [{ sku: 'R-1', title: 'Right item', vendor: 'Right', quantity: 2, price: '7.00' }] : []),
      ];
      return { reseller, supplierIndex: index % 2, payload: resellerOrder(reseller, lines), jobCount: lines.length };
    });

    const responses = await Promise.all(orders.map(({ reseller, payload }) => deliverOrder(reseller, payload)));
    const idsPerOrder = responses.map((response, index) => expectReceived(response, orders[index]!.jobCount));
    const allIds = idsPerOrder.flat();
    expect(new Set(allIds).size).toBe(allIds.length);

    // Each job belongs to the order whose answer named it, and to the supplier its lines matched.
    const rows = new Map((await Promise.all(resellers.map((r) => syncJobRows(service.databaseUrl, r.store.id)))).flat().map((row) => [row.id, row]));
    orders.forEach((order, index) => {
      const jobs = idsPerOrder[index]!.map((id) => rows.get(id)!);
      expect(jobs.map((job) => job.external_order_id)).toEqual(jobs.map(() => String((order.payload as { id: number }).id)));
      const { left, right } = suppliers[order.supplierIndex]!;
      expect(jobs.map((job) => job.source_store_id).sort()).toEqual((order.jobCount === 2 ? [left.id, right.id] : [left.id]).sort());
    });
    expect(rows.size).toBe(allIds.length);
    expect(await queueMessageCount(service.databaseUrl, 'sync-job.process', allIds)).toBe(allIds.length);
    for (const reseller of resellers) {
      const ownIds = orders.flatMap((order, index) => (order.reseller === reseller ? idsPerOrder[index]! : []));
      const created = (await webhookAuditRows(service.databaseUrl, reseller.store.id)).filter((entry) => entry.action === 'sync_job.created');
      expect(created.map((entry) => entry.resource_id).sort()).toEqual(ownIds.sort());
    }
    await waitFor(async () => {
      const placed = suppliers.flatMap(({ left, right }) => [left, right]).reduce((sum, supplier) => sum + sandbox.ordersFor(supplier.shopDomain).length, 0);
      return placed === allIds.length ? placed : null;
    }, 30_000, 'every supplier order to be placed');
  });
});

describe('verification', () => {
  let reseller: Reseller;
  let supplier: { id: string; shopDomain: string };
  let supplierSecret: string;
  let payload: JsonObject;
  let body: string;

  it.beforeAll(async ({ newReseller, addSupplier, resellerOrder }) => {
    reseller = await newReseller('platform_a');
    supplierSecret = `whsec_supplier_${uniqueSuffix()}`;
    supplier = await addSupplier(reseller, { platform: 'custom', vendorTag: 'Acme Tools', webhookSecret: supplierSecret });
    payload = resellerOrder(reseller, [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme Tools', quantity: 1, price: '10.00' }]);
    body = JSON.stringify(payload);
  });

  const post = (service: TestService, delivery: Partial<Parameters<typeof postRawWebhook>[2]>) =>
    postRawWebhook(service.url, ORDERS_PATH, {
      body,
      secret: reseller.secret,
      shopDomain: reseller.store.shopDomain,
      topic: 'orders/create',
      ...delivery,
    });

  /** Nothing at all came of the deliveries. */
  async function expectNothingCreated(service: TestService, sandbox: Sandbox) {
    expect(await syncJobRows(service.databaseUrl, reseller.store.id)).toEqual([]);
    expect(await webhookAuditRows(service.databaseUrl, reseller.store.id)).toEqual([]);
    expect(sandbox.ordersFor(supplier.shopDomain)).toEqual([]);
  }

  it('answers every unverifiable delivery with the same 401 invalid_signature and creates nothing', async ({ service, api, sandbox }) => {
    const otherUser = await registerUser(api);
    const deletedSecret = `whsec_deleted_${uniqueSuffix()}`;
    const deletedStore = await createResellerStore(api, otherUser.token, { webhookSecret: deletedSecret });
    expect((await api.delete(`/v1/reseller_stores/${deletedStore.id}`, { token: otherUser.token })).status).toBe(204);

    const tampered = JSON.stringify({ ...payload, line_items: [{ ...(payload.line_items as JsonObject[])[0], quantity: 100 }] });
    const cases: Record<string, Partial<Parameters<typeof postRawWebhook>[2]>> = {
      'forged signature (wrong secret)': { secret: 'whsec_not_the_secret' },
      'tampered body (signature of another body)': { body: tampered, signedBody: body },
      'missing signature header': { secret: undefined },
      'missing shop domain header': { shopDomain: undefined },
      'unknown shop domain': { shopDomain: `nobody-${uniqueSuffix()}.example.com` },
      "a deleted reseller store's domain": { shopDomain: deletedStore.shopDomain, secret: deletedSecret },
      "a source store's domain and secret": { shopDomain: supplier.shopDomain, secret: supplierSecret },
      'valid signature over a re-serialised body with other whitespace': { body: JSON.stringify(payload, null, 2), signedBody: body },
      // Each of these decodes, leniently, to the right 32 bytes.
      'the right signature with "!!!" appended': { mangleSignature: (signature) => `${signature}!!!` },
      'the right signature with a space inside': { mangleSignature: (signature) => `${signature.slice(0, 20)} ${signature.slice(20)}` },
      'the right signature in base64url form, unpadded': {
        mangleSignature: (signature) => signature.replaceAll('+', '-').replaceAll('/', '_').replace(/=$/, ''),
      },
    };
    const bodies: Record<string, unknown>[] = [];
    for (const [name, delivery] of Object.entries(cases)) {
      const response = await post(service, delivery);
      expect(response.status, name).toBe(401);
      expectError(response, 401, 'invalid_signature');
      bodies.push(withoutRequestId(response.body));
    }
    // A garbage signature header.
    const garbage = await fetch(`${service.url}${ORDERS_PATH}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-platform-hmac-sha256': '!!not base64!!',
        'x-platform-shop-domain': reseller.store.shopDomain,
        'x-platform-topic': 'orders/create',
      },
      body,
    });
    expect(garbage.status).toBe(401);
    bodies.push(withoutRequestId((await garbage.json()) as Record<string, unknown>));
    // Not told apart: identical bodies apart from the request id.
    for (const other of bodies) expect(other).toEqual(bodies[0]);
    await expectNothingCreated(service, sandbox);
  });

  it('verifies the exact bytes received, not a re-serialisation', async ({ service, api, sandbox, newReseller, resellerOrder }) => {
    // The same order pretty-printed and signed over those bytes verifies (and is routed).
    const other = await newReseller('platform_a');
    const otherSupplier = await createSourceStore(api, other.user.token, other.store.id, { vendorTag: 'Acme Tools' });
    const pretty = JSON.stringify(resellerOrder(other, [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme Tools', quantity: 1, price: '10.00' }]), null, 2);
    const response = await postRawWebhook(service.url, ORDERS_PATH, { body: pretty, secret: other.secret, shopDomain: other.store.shopDomain, topic: 'orders/create' });
    expectReceived(response, 1);
    // The shop domain header is matched like a hostname: case and surrounding blanks do not matter.
    const shouting = await postRawWebhook(service.url, ORDERS_PATH, { body: pretty, secret: other.secret, shopDomain: ` ${other.store.shopDomain.toUpperCase()} `, topic: 'orders/create' });
    expect(expectReceived(shouting, 1)).toEqual((response.body as { syncJobIds: string[] }).syncJobIds);
    await waitFor(async () => sandbox.ordersFor(otherSupplier.shopDomain).length === 1, 15_000, 'the routed order');
  });

  it('rejects a verified body that is not a valid order with 400 validation_failed', async ({ service, sandbox, newReseller }) => {
    const line = (payload.line_items as JsonObject[])[0]!;
    const invalid: Record<string, { body: string; param?: string }> = {
      'an object that is no order': { body: '{"foo":1}' },
      'an order without lines': { body: JSON.stringify({ ...payload, line_items: undefined }), param: 'line_items' },
      'a line without a title': { body: JSON.stringify({ ...payload, line_items: [{ ...line, title: undefined }] }), param: 'line_items.0.title' },
      'a line with a negative quantity': { body: JSON.stringify({ ...payload, line_items: [{ ...line, quantity: -1 }] }), param: 'line_items.0.quantity' },
      'a line with an unusable price': { body: JSON.stringify({ ...payload, line_items: [{ ...line, price: 'ten' }] }), param: 'line_items.0.price' },
      'an order without an id': { body: JSON.stringify({ ...payload, id: undefined }), param: 'id' },
      // JSON.parse would read it as 12345678901234567000: another order's id.
      'an id beyond exact JSON integers': { body: replaced(body, /^\{"id":\d+/, '{"id":12345678901234567890'), param: 'id' },
      'a JSON array': { body: '[1,2,3]' },
      'a JSON string': { body: '"order"' },
      'JSON null': { body: 'null' },
      'not JSON at all': { body: 'order=1&vendor=Acme', param: 'body' },
      'truncated JSON': { body: body.slice(0, -10), param: 'body' },
      'an empty body': { body: '' },
    };
    // Another reseller, whose audit log the refusals go to (the shared one must stay empty).
    const other = await newReseller('platform_a');
    const refused: string[] = [];
    for (const [name, { body: raw, param }] of Object.entries(invalid)) {
      const response = await post(service, { body: raw, secret: other.secret, shopDomain: other.store.shopDomain });
      expect(response.status, `${name}: ${JSON.stringify(response.body)}`).toBe(400);
      expectError(response, 400, 'validation_failed', param);
      // An object read as an order and found invalid is audited with the reason; bytes that are no JSON object are not orders.
      if (raw.startsWith('{') && name !== 'truncated JSON') refused.push(response.body.error.param);
    }
    expect(await syncJobRows(service.databaseUrl, other.store.id)).toEqual([]);
    const audit = await webhookAuditRows(service.databaseUrl, other.store.id);
    expect(audit.map((row) => [row.action, row.metadata.param])).toEqual(refused.map((param) => ['order.refused', param]));
    expect(refused).toHaveLength(7);
    await expectNothingCreated(service, sandbox);
  });

  it('answers 415 for another content type, but only once the delivery verified', async ({ service, sandbox }) => {
    for (const contentType of ['text/plain', 'application/x-www-form-urlencoded']) {
      expectError(await post(service, { contentType }), 415, 'unsupported_media_type');
      expectError(await post(service, { contentType, secret: 'whsec_not_the_secret' }), 401, 'invalid_signature');
    }
    await expectNothingCreated(service, sandbox);
  });

  it('answers 413 for a body over 1 MiB', async ({ service, sandbox }) => {
    const huge = JSON.stringify({ ...payload, note: 'x'.repeat(1024 * 1024) });
    expectError(await post(service, { body: huge }), 413, 'payload_too_large');
    expectError(await post(service, { body: huge, secret: 'whsec_not_the_secret' }), 413, 'payload_too_large');
    await expectNothingCreated(service, sandbox);
  });

  it('serves the endpoint under any letter case, still only to the reseller store, and only for POST', async ({ service, api, sandbox, newReseller, resellerOrder }) => {
    const other = await newReseller('platform_a');
    const otherSupplier = await createSourceStore(api, other.user.token, other.store.id, { vendorTag: 'Acme Tools', webhookSecret: 'whsec_other_supplier' });
    const order = JSON.stringify(resellerOrder(other, [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme Tools', quantity: 1, price: '10.00' }]));
    const delivery = { body: order, secret: other.secret, shopDomain: other.store.shopDomain, topic: 'orders/create' };
    // Routes match paths case-insensitively; the signature check must agree on which endpoint this is.
    expectReceived(await postRawWebhook(service.url, '/V1/Orders/Webhook', delivery), 1);
    const bySupplier = { ...delivery, secret: 'whsec_other_supplier', shopDomain: otherSupplier.shopDomain };
    expectError(await postRawWebhook(service.url, '/V1/ORDERS/WEBHOOK', bySupplier), 401, 'invalid_signature');
    expectError(await postRawWebhook(service.url, ORDERS_PATH, bySupplier), 401, 'invalid_signature');
    expect(await syncJobRows(service.databaseUrl, other.store.id)).toHaveLength(1);
    // Not a delivery: no route, rather than a signature error.
    expectError(await api.get(ORDERS_PATH), 404, 'not_found');
    await waitFor(async () => sandbox.ordersFor(otherSupplier.shopDomain).length === 1, 15_000, 'the routed order');
  });

  // Issue 23 (order-changes.md, "Signals in"): a topic the endpoint does not act on is answered
  // 200 ignored so the platform stops resending it (it used to be a 400). orders/updated acts only
  // on platform_b's cancelled or refunded orders.
  it('answers 200 ignored for a topic it does not act on, and creates nothing', async ({ service, sandbox }) => {
    for (const topic of ['fulfillments/create', 'orders/updated', '']) {
      const response = await post(service, { topic });
      expect(response.status, `${topic}: ${JSON.stringify(response.body)}`).toBe(200);
      expect(response.body).toEqual({ received: true, ignored: true, request_id: expect.any(String) });
    }
    await expectNothingCreated(service, sandbox);
  });
});
