/**
 * POST /v1/sync_jobs takes `external_order_id` as a numeric order id (interface.md 4.8). On
 * platform_a and platform_b an order id is an integer, so `01001` and `1001` name one order: a
 * second job for it would be a second supplier order for one customer order (if the platform
 * resolves the padded id) or a job that dies, and the order's cancellations and tracking (found
 * by `1001`) would never reach it. A custom storefront's ids are strings and are kept as given.
 */
import { describe, expect } from 'vitest';
import { expectError } from './support/assertions.ts';
import { test as it } from './support/fixtures.ts';
import { addSupplier, createJob, lineOf, openShop, seedResellerOrder, settled, type Shop, type Supplier } from './support/sync-jobs.ts';

describe('a manual job for an order id written with leading zeros', () => {
  let shop: Shop;
  let acme: Supplier;
  it.beforeAll(async ({ api }) => {
    shop = await openShop(api);
    acme = await addSupplier(api, shop, { vendorTag: 'Acme' });
  });

  it('is the job of the order itself: 200 with the existing job, no second job, one supplier order', async ({ api, sandbox }) => {
    const orderId = seedResellerOrder(sandbox, shop, [lineOf('Acme')]);
    const first = await createJob(api, shop.user.token, acme.id, orderId);
    expect((await settled(api, shop.user.token, first.id)).status).toBe('completed');

    const padded = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: acme.id, external_order_id: `00${orderId}` } });
    expect(padded.status, JSON.stringify(padded.body)).toBe(200);
    expect(padded.body).toMatchObject({ id: first.id, externalOrderId: orderId });

    const listed = await api.get(`/v1/sync_jobs?source_store_id=${acme.id}`, { token: shop.user.token });
    expect(listed.body.data.map((job: { externalOrderId: string }) => job.externalOrderId)).toEqual([orderId]);
    expect(sandbox.ordersFor(acme.shopDomain)).toHaveLength(1);
  });

  it('a padded id with no job yet is created under the order’s own id', async ({ api, sandbox }) => {
    const orderId = seedResellerOrder(sandbox, shop, [lineOf('Acme')]);
    const created = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: acme.id, external_order_id: `0${orderId}` } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.externalOrderId).toBe(orderId);
    expect(await settled(api, shop.user.token, created.body.id)).toMatchObject({ status: 'completed', externalOrderId: orderId });
  });

  it('refuses order id 0, which no platform_a or platform_b order has', async ({ api }) => {
    for (const external_order_id of ['0', '000']) {
      expectError(await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: acme.id, external_order_id } }), 400, 'validation_failed', 'external_order_id');
    }
  });

  it('keeps a custom storefront’s id as given: its ids are strings', async ({ api, sandbox }) => {
    const custom = await openShop(api, { platform: 'custom' });
    const supplier = await addSupplier(api, custom, { vendorTag: 'Acme' });
    const orderId = seedResellerOrder(sandbox, custom, [lineOf('Acme')], `00${Date.now() % 1_000_000}`);
    const created = await createJob(api, custom.user.token, supplier.id, orderId);
    expect(created.externalOrderId).toBe(orderId);
    expect((await settled(api, custom.user.token, created.id)).status).toBe('completed');
  });
});

describe('the list filter external_order_id', () => {
  const jobsFor = async (api: Parameters<typeof createJob>[0], token: string, query: string): Promise<string[]> => {
    const listed = await api.get(`/v1/sync_jobs?${query}`, { token });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    return listed.body.data.map((job: { id: string }) => job.id);
  };

  it('finds a platform_a job by the order id written with leading zeros, as POST reads it, and a custom storefront’s by its id as given', async ({ api, sandbox }) => {
    const shop = await openShop(api);
    const acme = await addSupplier(api, shop, { vendorTag: 'Acme' });
    const token = shop.user.token;
    const orderId = seedResellerOrder(sandbox, shop, [lineOf('Acme')]);
    const numeric = await createJob(api, token, acme.id, `0${orderId}`);
    // No custom storefront yet: the padded id is the number alone.
    expect(await jobsFor(api, token, `external_order_id=000${orderId}`)).toEqual([numeric.id]);
    expect(await jobsFor(api, token, `external_order_id=000`)).toEqual([]);

    const custom = await openShop(api, { platform: 'custom' }, shop.user);
    const customAcme = await addSupplier(api, custom, { vendorTag: 'Acme' });
    // On the custom storefront `0<id>` and `<id>` are two orders; only `0<id>` has a job.
    const customOrderId = seedResellerOrder(sandbox, custom, [lineOf('Acme')], `0${orderId}`);
    const customJob = await createJob(api, token, customAcme.id, customOrderId);

    expect(await jobsFor(api, token, `external_order_id=${orderId}`)).toEqual([numeric.id]);
    expect((await jobsFor(api, token, `external_order_id=0${orderId}`)).sort()).toEqual([numeric.id, customJob.id].sort());
    expect(await jobsFor(api, token, `external_order_id=00${orderId}`)).toEqual([numeric.id]);
    expect(await jobsFor(api, token, `external_order_id=00${orderId}&reseller_store_id=${shop.reseller.id}`)).toEqual([numeric.id]);
    expect(await jobsFor(api, token, `external_order_id=0${orderId}&reseller_store_id=${custom.reseller.id}`)).toEqual([customJob.id]);
    expect(await jobsFor(api, token, `external_order_id=${orderId}&reseller_store_id=${custom.reseller.id}`)).toEqual([]);
    expect(await jobsFor(api, token, `external_order_id=000`)).toEqual([]);
  });
});

describe('a manual job for a custom storefront’s order', () => {
  let custom: Shop;
  let supplier: Supplier;
  it.beforeAll(async ({ api }) => {
    custom = await openShop(api, { platform: 'custom' });
    supplier = await addSupplier(api, custom, { vendorTag: 'Acme' });
  });

  it('takes the storefront’s string id (letters, digits, _ and -) and places the order', async ({ api, sandbox }) => {
    const orderId = seedResellerOrder(sandbox, custom, [lineOf('Acme')], `SO-${Date.now() % 1_000_000}_a`);
    const created = await createJob(api, custom.user.token, supplier.id, orderId);
    expect(created.externalOrderId).toBe(orderId);
    expect((await settled(api, custom.user.token, created.id)).status).toBe('completed');
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);

    const again = await api.post('/v1/sync_jobs', { token: custom.user.token, body: { source_store_id: supplier.id, external_order_id: orderId } });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.id).toBe(created.id);
    const listed = await api.get(`/v1/sync_jobs?external_order_id=${orderId}`, { token: custom.user.token });
    expect(listed.body.data.map((job: { id: string }) => job.id)).toEqual([created.id]);
  });

  it('refuses an id no order the service keeps can have, with a 400 naming external_order_id', async ({ api }) => {
    const jobsOf = async () => (await api.get(`/v1/sync_jobs?source_store_id=${supplier.id}`, { token: custom.user.token })).body.data.length;
    const before = await jobsOf();
    for (const external_order_id of ['', 'SO 1001', 'SO/1001', 'ordre-é', 'x'.repeat(33), 'a\u0000b']) {
      const response = await api.post('/v1/sync_jobs', { token: custom.user.token, body: { source_store_id: supplier.id, external_order_id } });
      expectError(response, 400, 'validation_failed', 'external_order_id');
    }
    expect(await jobsOf()).toBe(before);
  });

  it('keeps digits only for platform_a and platform_b storefronts, whose order ids are numbers', async ({ api }) => {
    for (const platform of ['platform_a', 'platform_b']) {
      const shop = await openShop(api, { platform });
      const acme = await addSupplier(api, shop, { vendorTag: 'Acme' });
      for (const external_order_id of ['SO-1001', '1001a', '1'.repeat(21)]) {
        const response = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: acme.id, external_order_id } });
        expectError(response, 400, 'validation_failed', 'external_order_id');
        expect(response.body.error.message).toMatch(/numer|digit/i);
      }
    }
  });
});
