import { randomBytes } from 'node:crypto';
import { describe, expect } from 'vitest';
import { expectError, ISO_UTC } from './support/assertions.ts';
import type { ApiClient } from './support/api.ts';
import { queryRows, watchColumnWrites } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';

const unique = () => randomBytes(4).toString('hex');
const STORE_FIELDS = ['createdAt', 'deletedAt', 'id', 'name', 'ownerId', 'platform', 'shopDomain'];
const ids = (body: { data: { id: string }[] }) => body.data.map((item) => item.id);

function validStore(overrides: Record<string, unknown> = {}) {
  return {
    name: 'Main storefront',
    platform: 'platform_b',
    shopDomain: `shop-${unique()}.example.com`,
    accessToken: `tok_${unique()}`,
    webhookSecret: `sec_${unique()}`,
    ...overrides,
  };
}

describe('POST /v1/reseller_stores', () => {
  it('creates a store (201) with a lower-cased shop domain', async ({ service, api, user }) => {
    const host = `My-Shop-${unique()}`;
    const response = await api.post('/v1/reseller_stores', {
      token: user.token,
      body: validStore({ name: 'Main storefront', shopDomain: `  ${host}.Example.COM ` }),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(Object.keys(response.body).sort()).toEqual([...STORE_FIELDS, 'request_id'].sort());
    expect(response.body).toMatchObject({
      name: 'Main storefront',
      platform: 'platform_b',
      shopDomain: `${host.toLowerCase()}.example.com`,
      deletedAt: null,
    });
    expect(response.body.id).toMatch(/^rst_[0-9a-f]{32}$/);
    expect(response.body.ownerId).toMatch(/^usr_/);
    expect(response.body.createdAt).toMatch(ISO_UTC);
    expect(response.headers.get('x-request-id')).toBe(response.body.request_id);

    const [row] = await queryRows(service.databaseUrl, 'select shop_domain from reseller_stores where id = $1', [response.body.id]);
    expect(row!.shop_domain).toBe(`${host.toLowerCase()}.example.com`);
  });

  it.for(['platform_a', 'platform_b', 'custom'] as const)('accepts platform %s', async (platform, { api, user }) => {
    expect((await createResellerStore(api, user.token, { platform })).platform).toBe(platform);
  });

  it.for([
    ['a missing name', { name: undefined }, 'name'],
    ['a blank name', { name: '   ' }, 'name'],
    ['a name over 200 characters', { name: 'n'.repeat(201) }, 'name'],
    ['an unknown platform', { platform: 'shopify' }, 'platform'],
    ['a missing platform', { platform: undefined }, 'platform'],
    ['a shop domain with a scheme', { shopDomain: 'https://shop.example.com' }, 'shopDomain'],
    ['a shop domain with a path', { shopDomain: 'shop.example.com/admin' }, 'shopDomain'],
    ['a shop domain without a dot', { shopDomain: 'localhost' }, 'shopDomain'],
    ['a shop domain with spaces inside', { shopDomain: 'my shop.example.com' }, 'shopDomain'],
    ['a missing shop domain', { shopDomain: undefined }, 'shopDomain'],
    ['a missing access token', { accessToken: undefined }, 'accessToken'],
    ['an empty access token', { accessToken: '' }, 'accessToken'],
    ['a missing webhook secret', { webhookSecret: undefined }, 'webhookSecret'],
    ['a numeric webhook secret', { webhookSecret: 42 }, 'webhookSecret'],
    // The access token goes into a header of every platform call: CR/LF there made every job die.
    ['an access token with CR/LF', { accessToken: 'shpat_x\r\nX-Injected: 1' }, 'accessToken'],
    ['an access token with a control character', { accessToken: 'shpat_\u0001x' }, 'accessToken'],
    ['an access token with characters a header cannot carry', { accessToken: 'shpat_ü€' }, 'accessToken'],
    ['an access token over 4096 characters', { accessToken: 'a'.repeat(4097) }, 'accessToken'],
    ['a webhook secret with CR/LF', { webhookSecret: 'whsec\r\n' }, 'webhookSecret'],
    ['a webhook secret over 1024 characters', { webhookSecret: 'w'.repeat(1025) }, 'webhookSecret'],
  ] as const)('rejects %s with 400 naming the field', async ([_label, overrides, param], { api, user }) => {
    const response = await api.post('/v1/reseller_stores', { token: user.token, body: validStore(overrides) });
    expectError(response, 400, 'validation_failed', param);
  });

  it('rejects a body that is not an object', async ({ api, user }) => {
    const response = await api.post('/v1/reseller_stores', { token: user.token, body: [validStore()] });
    expectError(response, 400, 'validation_failed');
  });

  it('answers 409 shop_domain_taken for a domain an active store uses, whatever its case and owner', async ({ service, api, user }) => {
    const existing = await createResellerStore(api, user.token);
    const same = await api.post('/v1/reseller_stores', {
      token: user.token,
      body: validStore({ shopDomain: existing.shopDomain.toUpperCase() }),
    });
    expectError(same, 409, 'conflict', 'shopDomain');
    expect(same.body.error.details).toEqual({ reason: 'shop_domain_taken' });

    const otherUser = await registerUser(api);
    const other = await api.post('/v1/reseller_stores', {
      token: otherUser.token,
      body: validStore({ shopDomain: existing.shopDomain }),
    });
    expectError(other, 409, 'conflict', 'shopDomain');
    expect(other.body.error.details).toEqual({ reason: 'shop_domain_taken' });

    const rows = await queryRows(service.databaseUrl, 'select id from reseller_stores where shop_domain = $1', [existing.shopDomain]);
    expect(rows).toHaveLength(1);
  });
});

describe('concurrent creates', () => {
  it('give a shop domain to exactly one of several racing requests; the rest get 409', async ({ service, api, user }) => {
    const shopDomain = `race-${unique()}.example.com`;
    const results = await Promise.all(
      [1, 2, 3, 4].map(() => api.post('/v1/reseller_stores', { token: user.token, body: validStore({ shopDomain }) })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
    for (const r of results.filter((r) => r.status === 409)) expect(r.body.error.details).toEqual({ reason: 'shop_domain_taken' });
    const rows = await queryRows(service.databaseUrl, 'select id from reseller_stores where shop_domain = $1', [shopDomain]);
    expect(rows).toHaveLength(1);
    // No audit entry for the stores that were not created.
    const audit = await queryRows(service.databaseUrl, `select resource_id from audit_entries where action = 'reseller_store.created' and metadata->>'shopDomain' = $1`, [shopDomain]);
    expect(audit).toEqual(rows.map((row) => ({ resource_id: row.id })));
  });
});

describe('GET /v1/reseller_stores/{id}', () => {
  it('returns the store', async ({ api, user }) => {
    const store = await createResellerStore(api, user.token, { platform: 'custom' });
    const response = await api.get(`/v1/reseller_stores/${store.id}`, { token: user.token });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual([...STORE_FIELDS, 'request_id'].sort());
    const { request_id: _a, ...got } = response.body;
    const { request_id: _b, ...created } = store;
    expect(got).toEqual(created);
  });

  it('answers 404 not_found for an unknown id', async ({ api, user }) => {
    expectError(await api.get('/v1/reseller_stores/rst_00000000000000000000000000000000', { token: user.token }), 404, 'not_found');
    expectError(await api.get('/v1/reseller_stores/whatever', { token: user.token }), 404, 'not_found');
  });

  it('answers 400 for an id over 64 characters', async ({ api, user }) => {
    expectError(await api.get(`/v1/reseller_stores/${'x'.repeat(65)}`, { token: user.token }), 400, 'validation_failed', 'id');
  });

  it('requires authentication', async ({ api, user }) => {
    const store = await createResellerStore(api, user.token);
    expectError(await api.get(`/v1/reseller_stores/${store.id}`), 401, 'unauthorized');
  });
});

describe('GET /v1/reseller_stores', () => {
  let owner: TestUser;
  let newestFirst: string[];
  it.beforeAll(async ({ api }) => {
    owner = await registerUser(api);
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await createResellerStore(api, owner.token, { name: `Store ${i}` }));
    newestFirst = created.map((store) => store.id).reverse();
  });
  const list = (api: ApiClient, query = '') => api.get(`/v1/reseller_stores${query}`, { token: owner.token });

  it('lists the caller\'s stores newest first in the list envelope', async ({ api }) => {
    const response = await list(api);
    expect(response.status).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual(['data', 'has_more', 'object', 'request_id', 'url']);
    expect(response.body).toMatchObject({ object: 'list', has_more: false, url: '/v1/reseller_stores' });
    expect(ids(response.body)).toEqual(newestFirst);
    for (const store of response.body.data) expect(Object.keys(store).sort()).toEqual(STORE_FIELDS);
  });

  it('pages forwards with starting_after and backwards with ending_before', async ({ api }) => {
    const page1 = await list(api, '?limit=2');
    expect(ids(page1.body)).toEqual(newestFirst.slice(0, 2));
    expect(page1.body.has_more).toBe(true);
    expect(page1.body.url).toBe('/v1/reseller_stores');

    const page2 = await list(api, `?limit=2&starting_after=${newestFirst[1]}`);
    expect(ids(page2.body)).toEqual(newestFirst.slice(2, 4));
    expect(page2.body.has_more).toBe(true);

    const page3 = await list(api, `?limit=2&starting_after=${newestFirst[3]}`);
    expect(ids(page3.body)).toEqual(newestFirst.slice(4));
    expect(page3.body.has_more).toBe(false);

    const before = await list(api, `?limit=2&ending_before=${newestFirst[4]}`);
    expect(ids(before.body)).toEqual(newestFirst.slice(2, 4));
    expect(before.body.has_more).toBe(true);

    const first = await list(api, `?limit=2&ending_before=${newestFirst[2]}`);
    expect(ids(first.body)).toEqual(newestFirst.slice(0, 2));
    expect(first.body.has_more).toBe(false);

    const end = await list(api, `?starting_after=${newestFirst[4]}`);
    expect(end.body.data).toEqual([]);
    expect(end.body.has_more).toBe(false);
  });

  it('defaults to 20 per page and allows up to 100', async ({ api }) => {
    const many = await registerUser(api);
    for (let i = 0; i < 21; i++) await createResellerStore(api, many.token);
    const first = await api.get('/v1/reseller_stores', { token: many.token });
    expect(first.body.data).toHaveLength(20);
    expect(first.body.has_more).toBe(true);
    const all = await api.get('/v1/reseller_stores?limit=100', { token: many.token });
    expect(all.body.data).toHaveLength(21);
    expect(all.body.has_more).toBe(false);
  });

  it.for([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=2.5', 'limit'],
    [`starting_after=${'x'.repeat(65)}`, 'starting_after'],
  ] as const)('rejects %s with 400', async ([query, param], { api }) => {
    expectError(await list(api, `?${query}`), 400, 'validation_failed', param);
  });

  it('rejects starting_after together with ending_before', async ({ api }) => {
    expectError(await list(api, `?starting_after=${newestFirst[0]}&ending_before=${newestFirst[3]}`), 400, 'validation_failed');
  });

  it('shows only the caller\'s stores', async ({ api }) => {
    const other = await registerUser(api);
    const theirs = await createResellerStore(api, other.token);
    expect(ids((await list(api, '?limit=100')).body)).not.toContain(theirs.id);
    expect(ids((await api.get('/v1/reseller_stores', { token: other.token })).body)).toEqual([theirs.id]);
  });
});

describe('PATCH /v1/reseller_stores/{id}', () => {
  it('renames the store', async ({ api, user }) => {
    const store = await createResellerStore(api, user.token);
    const response = await api.patch(`/v1/reseller_stores/${store.id}`, { token: user.token, body: { name: '  New name ' } });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ id: store.id, name: 'New name', shopDomain: store.shopDomain, platform: store.platform });
    expect((await api.get(`/v1/reseller_stores/${store.id}`, { token: user.token })).body.name).toBe('New name');
  });

  it('accepts an empty body and changes nothing', async ({ api, user }) => {
    const store = await createResellerStore(api, user.token);
    const response = await api.patch(`/v1/reseller_stores/${store.id}`, { token: user.token, body: {} });
    expect(response.status).toBe(200);
    expect(response.body.name).toBe(store.name);
  });

  it.for([
    ['shopDomain', { shopDomain: 'other.example.com' }],
    ['platform', { platform: 'custom' }],
    ['accessToken', { accessToken: 'new-token' }],
    ['webhookSecret', { name: 'ok', webhookSecret: 'new-secret' }],
    ['id', { id: 'rst_other' }],
  ] as const)('rejects the unknown or read-only field %s with 400 naming it', async ([param, body], { api, user }) => {
    const store = await createResellerStore(api, user.token);
    const response = await api.patch(`/v1/reseller_stores/${store.id}`, { token: user.token, body });
    expectError(response, 400, 'validation_failed', param);
    const after = await api.get(`/v1/reseller_stores/${store.id}`, { token: user.token });
    expect(after.body).toMatchObject({ name: store.name, shopDomain: store.shopDomain, platform: store.platform });
  });

  it.for([
    ['a blank name', { name: '' }],
    ['a name over 200 characters', { name: 'n'.repeat(201) }],
    ['a null name', { name: null }],
  ] as const)('rejects %s with 400', async ([_label, body], { api, user }) => {
    const store = await createResellerStore(api, user.token);
    expectError(await api.patch(`/v1/reseller_stores/${store.id}`, { token: user.token, body }), 400, 'validation_failed', 'name');
  });

  it('answers 404 for an unknown or deleted store', async ({ api, user }) => {
    expectError(await api.patch('/v1/reseller_stores/rst_missing', { token: user.token, body: { name: 'x' } }), 404, 'not_found');
    const store = await createResellerStore(api, user.token);
    expect((await api.delete(`/v1/reseller_stores/${store.id}`, { token: user.token })).status).toBe(204);
    expectError(await api.patch(`/v1/reseller_stores/${store.id}`, { token: user.token, body: { name: 'x' } }), 404, 'not_found');
  });
});

describe('DELETE /v1/reseller_stores/{id}', () => {
  it('deletes once under concurrent DELETEs: one 204 and one audit entry, every other 404, deletedAt written once', async ({ service, api, user }) => {
    const deletions = await watchColumnWrites(service.databaseUrl, 'reseller_stores', 'deleted_at');
    const store = await createResellerStore(api, user.token);
    const responses = await Promise.all(Array.from({ length: 20 }, () => api.delete(`/v1/reseller_stores/${store.id}`, { token: user.token })));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 204)).toHaveLength(1);
    for (const response of responses.filter((r) => r.status !== 204)) expectError(response, 404, 'not_found');
    expect(await deletions(store.id)).toHaveLength(1);
    const audit = await queryRows(service.databaseUrl, "select id from audit_entries where resource_id = $1 and action = 'reseller_store.deleted'", [store.id]);
    expect(audit).toHaveLength(1);
  });

  it('soft-deletes: 204, the row is kept with deletedAt, GET still shows it, lists do not', async ({ service, api, user }) => {
    const store = await createResellerStore(api, user.token);
    const response = await api.delete(`/v1/reseller_stores/${store.id}`, { token: user.token });
    expect(response.status).toBe(204);
    expect(response.body).toBeUndefined();

    const [row] = await queryRows<{ deleted_at: Date | null; name: string }>(
      service.databaseUrl,
      'select deleted_at, name from reseller_stores where id = $1',
      [store.id],
    );
    expect(row!.deleted_at).toBeInstanceOf(Date);
    expect(row!.name).toBe(store.name);

    const got = await api.get(`/v1/reseller_stores/${store.id}`, { token: user.token });
    expect(got.status).toBe(200);
    expect(got.body.deletedAt).toMatch(ISO_UTC);
    expect(Date.parse(got.body.deletedAt)).toBe(row!.deleted_at!.getTime());

    const listed = await api.get('/v1/reseller_stores?limit=100', { token: user.token });
    expect(ids(listed.body)).not.toContain(store.id);

    expectError(await api.delete(`/v1/reseller_stores/${store.id}`, { token: user.token }), 404, 'not_found');
  });

  it('soft-deletes the store\'s source stores and accepts no new ones', async ({ api, user }) => {
    const store = await createResellerStore(api, user.token);
    const source = await createSourceStore(api, user.token, store.id);
    expect((await api.delete(`/v1/reseller_stores/${store.id}`, { token: user.token })).status).toBe(204);

    const got = await api.get(`/v1/reseller_stores/${store.id}/source_stores/${source.id}`, { token: user.token });
    expect(got.status).toBe(200);
    expect(got.body.deletedAt).toMatch(ISO_UTC);
    const listed = await api.get(`/v1/reseller_stores/${store.id}/source_stores`, { token: user.token });
    expect(listed.body.data).toEqual([]);

    const create = await api.post(`/v1/reseller_stores/${store.id}/source_stores`, {
      token: user.token,
      body: {
        name: 'Late supplier',
        platform: 'custom',
        shopDomain: `late-${unique()}.example.com`,
        accessToken: 'a',
        webhookSecret: 'b',
        vendorTag: 'Late',
        pricingMode: 'percentage',
        pricingConfig: { type: 'percentage', value: 10 },
      },
    });
    expectError(create, 404, 'not_found');
  });

  it('frees the shop domain for a new store', async ({ api, user }) => {
    const store = await createResellerStore(api, user.token);
    expect((await api.delete(`/v1/reseller_stores/${store.id}`, { token: user.token })).status).toBe(204);
    const again = await createResellerStore(api, user.token, { shopDomain: store.shopDomain });
    expect(again.id).not.toBe(store.id);
    expect(again.shopDomain).toBe(store.shopDomain);
    // ...but only one active store may hold it.
    expectError(
      await api.post('/v1/reseller_stores', { token: user.token, body: validStore({ shopDomain: store.shopDomain }) }),
      409,
      'conflict',
      'shopDomain',
    );
  });

  it('answers 404 for an unknown id', async ({ api, user }) => {
    expectError(await api.delete('/v1/reseller_stores/rst_missing', { token: user.token }), 404, 'not_found');
  });
});
