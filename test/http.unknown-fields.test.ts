/**
 * A request body field the route does not define is refused, on every route that takes a JSON body
 * of the service's own (the platforms' webhooks take their payloads as sent): 400
 * `validation_failed` with `param` naming the field, the answer PATCH gave alone before. A field
 * dropped in silence is a misspelt option the caller believes was applied (`enviroment: "live"`
 * making a test key, `pricing_mode` leaving the default), and the spec says nothing to the contrary.
 */
import { describe, expect } from 'vitest';
import { expectError } from './support/assertions.ts';
import { registerUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';
import { addSupplier, openShop, type Shop, type Supplier } from './support/sync-jobs.ts';

const unique = () => Math.random().toString(36).slice(2, 10);

describe('an unknown body field', () => {
  let shop: Shop;
  let supplier: Supplier;
  it.beforeAll(async ({ api }) => {
    shop = await openShop(api);
    supplier = await addSupplier(api, shop, { vendorTag: 'Acme' });
  });

  const resellerStoreBody = () => ({
    name: 'Shop',
    platform: 'platform_a',
    shopDomain: `shop-${unique()}.example.com`,
    accessToken: `shpat_${unique()}`,
    webhookSecret: `whsec_${unique()}`,
  });
  const sourceStoreBody = () => ({
    name: 'Supplier',
    platform: 'custom',
    shopDomain: `supplier-${unique()}.example.com`,
    accessToken: `sup_${unique()}`,
    webhookSecret: `whsec_${unique()}`,
    vendorTag: `Vendor ${unique()}`,
    pricingMode: 'percentage',
    pricingConfig: { type: 'percentage', value: 25 },
  });

  it('is refused by every POST with a body, as PATCH refuses it, and nothing is created', async ({ api }) => {
    const token = shop.user.token;
    const count = async (path: string) => (await api.get(`${path}?limit=100`, { token })).body.data.length;
    const before = {
      keys: await count('/v1/api_keys'),
      resellers: await count('/v1/reseller_stores'),
      sources: await count(`/v1/reseller_stores/${shop.reseller.id}/source_stores`),
      jobs: await count('/v1/sync_jobs'),
      endpoints: await count('/v1/webhook_endpoints'),
    };
    const email = `user-${unique()}@example.com`;
    const posts: [string, Record<string, unknown>, string | undefined][] = [
      ['/v1/auth/register', { email, password: 'correct horse battery', unexpected: true }, undefined],
      ['/v1/auth/login', { email: 'someone@example.com', password: 'correct horse battery', remember_me: true }, undefined],
      ['/v1/api_keys', { name: 'ci', environment: 'test', expires_in: 3600 }, token],
      ['/v1/reseller_stores', { ...resellerStoreBody(), currency: 'EUR' }, token],
      [`/v1/reseller_stores/${shop.reseller.id}/source_stores`, { ...sourceStoreBody(), pricing_mode: 'field_rules' }, token],
      ['/v1/sync_jobs', { source_store_id: supplier.id, external_order_id: '4501', priority: 'high' }, token],
      ['/v1/sync_jobs/bulk_retry', { status: 'dead', resellerStoreId: shop.reseller.id }, token],
      ['/v1/webhook_endpoints', { url: 'https://example.com/hooks', enabledEvents: ['*'], secret: 'mine' }, token],
      [`/v1/reseller_stores/${shop.reseller.id}/reconcile`, { since: new Date().toISOString(), until: new Date().toISOString() }, token],
    ];
    for (const [path, body, bearer] of posts) {
      const unknown = Object.keys(body).at(-1)!;
      const response = await api.post(path, { token: bearer, body });
      expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(400);
      expectError(response, 400, 'validation_failed', unknown);
    }
    const patched = await api.patch(`/v1/reseller_stores/${shop.reseller.id}`, { token, body: { name: 'Renamed', currency: 'EUR' } });
    expectError(patched, 400, 'validation_failed', 'currency');
    const posted = await api.post('/v1/reseller_stores', { token, body: { ...resellerStoreBody(), currency: 'EUR' } });
    expect(posted.body.error.message.replace('currency', '')).toBe(patched.body.error.message.replace('currency', ''));

    expect({
      keys: await count('/v1/api_keys'),
      resellers: await count('/v1/reseller_stores'),
      sources: await count(`/v1/reseller_stores/${shop.reseller.id}/source_stores`),
      jobs: await count('/v1/sync_jobs'),
      endpoints: await count('/v1/webhook_endpoints'),
    }).toEqual(before);
    // The refused registration made no user: the same email registers now.
    expect((await api.post('/v1/auth/register', { body: { email, password: 'correct horse battery' } })).status).toBe(201);
  });

  it('leaves the bodies without one as they were', async ({ api }) => {
    const user = await registerUser(api);
    expect((await api.post('/v1/api_keys', { token: user.token, body: { name: 'ci', environment: 'test' } })).status).toBe(201);
    const created = await api.post('/v1/reseller_stores', { token: user.token, body: resellerStoreBody() });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const source = await api.post(`/v1/reseller_stores/${created.body.id}/source_stores`, { token: user.token, body: sourceStoreBody() });
    expect(source.status, JSON.stringify(source.body)).toBe(201);
  });
});
