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

/**
 * A list's query parameters are strict too: a misspelt filter (`stauts=dead`) or another list's
 * (`resellerStoreId`, camel-cased) is 400 naming it, where it used to be dropped and the list answered
 * with every item: a script counting dead jobs, or feeding a bulk action, acted on the wrong set.
 */
describe('an unknown query parameter of a list', () => {
  let shop: Shop;
  it.beforeAll(async ({ api }) => {
    shop = await openShop(api);
    await addSupplier(api, shop, { vendorTag: 'Acme' });
  });

  it('is refused by every list, naming the parameter', async ({ api }) => {
    const token = shop.user.token;
    const lists = [
      '/v1/sync_jobs?stauts=dead',
      `/v1/sync_jobs?resellerStoreId=${shop.reseller.id}`,
      '/v1/audit_log?actions=sync_job.dead',
      '/v1/events?since=2026-01-01',
      '/v1/api_keys?environment=live',
      '/v1/reseller_stores?platform=custom',
      `/v1/reseller_stores/${shop.reseller.id}/source_stores?vendor=Acme`,
      `/v1/reseller_stores/${shop.reseller.id}/divergences?type=too_late`,
      '/v1/webhook_endpoints?enabled=true',
    ];
    for (const path of lists) {
      const param = new URL(path, 'http://x').searchParams.keys().next().value!;
      expectError(await api.get(path, { token }), 400, 'validation_failed', param);
    }
  });

  it('leaves the lists asked with their own parameters as they were', async ({ api }) => {
    const token = shop.user.token;
    const jobs = await api.get(`/v1/sync_jobs?status=dead&reseller_store_id=${shop.reseller.id}&limit=5`, { token });
    expect(jobs.status).toBe(200);
    expect(jobs.body).toMatchObject({ object: 'list', data: [] });
    expect((await api.get('/v1/audit_log?limit=1', { token })).status).toBe(200);
    expect((await api.get(`/v1/reseller_stores/${shop.reseller.id}/source_stores?limit=1`, { token })).body.data).toHaveLength(1);
  });
});
