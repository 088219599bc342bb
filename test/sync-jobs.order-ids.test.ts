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
