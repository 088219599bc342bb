import { randomBytes } from 'node:crypto';
import { describe, expect } from 'vitest';
import { expectError, ISO_UTC } from './support/assertions.ts';
import type { ApiClient } from './support/api.ts';
import { queryRows, watchColumnWrites } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';

const unique = () => randomBytes(4).toString('hex');
const SOURCE_FIELDS = [
  'createdAt',
  'deletedAt',
  'id',
  'name',
  'platform',
  'pricingConfig',
  'pricingMode',
  'resellerStoreId',
  'shopDomain',
  'vendorTag',
];
const ids = (body: { data: { id: string }[] }) => body.data.map((item) => item.id);
const base = (rstId: string) => `/v1/reseller_stores/${rstId}/source_stores`;

function validSource(overrides: Record<string, unknown> = {}) {
  return {
    name: 'Supplier',
    platform: 'platform_a',
    shopDomain: `supplier-${unique()}.example.com`,
    accessToken: `tok_${unique()}`,
    webhookSecret: `sec_${unique()}`,
    vendorTag: `Vendor ${unique()}`,
    pricingMode: 'percentage',
    pricingConfig: { type: 'percentage', value: 25 },
    ...overrides,
  };
}

const FIELD_RULES = {
  type: 'field_rules',
  rules: [
    { field: 'price', op: 'multiply', value: 0.8 },
    { field: 'price', op: 'add', value: -50 },
    { field: 'sku', op: 'prefix', value: 'SUP-' },
    { field: 'title', op: 'suffix', value: ' (supplier)' },
  ],
};

const fieldRules = (...rules: Record<string, unknown>[]) => ({ pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules } });

describe('POST /v1/reseller_stores/{rst_id}/source_stores', () => {
  it('creates a source store (201) with a lower-cased domain and trimmed vendor tag', async ({ service, api, user }) => {
    const rst = await createResellerStore(api, user.token);
    const tag = `Acme ${unique()}`;
    const response = await api.post(base(rst.id), {
      token: user.token,
      body: validSource({ name: 'Acme supplies', shopDomain: 'Acme-Supplies.Example.com', vendorTag: `  ${tag}  ` }),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(Object.keys(response.body).sort()).toEqual([...SOURCE_FIELDS, 'request_id'].sort());
    expect(response.body).toMatchObject({
      resellerStoreId: rst.id,
      name: 'Acme supplies',
      platform: 'platform_a',
      shopDomain: 'acme-supplies.example.com',
      vendorTag: tag,
      pricingMode: 'percentage',
      pricingConfig: { type: 'percentage', value: 25 },
      deletedAt: null,
    });
    expect(response.body.id).toMatch(/^sst_[0-9a-f]{32}$/);
    expect(response.body.createdAt).toMatch(ISO_UTC);

    const [row] = await queryRows(service.databaseUrl, 'select vendor_tag, vendor_key, shop_domain from source_stores where id = $1', [
      response.body.id,
    ]);
    expect(row).toMatchObject({ vendor_tag: tag, vendor_key: tag.toLowerCase(), shop_domain: 'acme-supplies.example.com' });
  });

  it('creates a field_rules source store', async ({ api, user }) => {
    const rst = await createResellerStore(api, user.token);
    const store = await createSourceStore(api, user.token, rst.id, { pricingMode: 'field_rules', pricingConfig: FIELD_RULES });
    expect(store.pricingMode).toBe('field_rules');
    expect(store.pricingConfig).toEqual(FIELD_RULES);
  });

  it.for([1000, -99.99, 0] as const)('accepts a markup of %d%% (the range is -100 < value <= 1000)', async (value, { api, user }) => {
    const rst = await createResellerStore(api, user.token);
    const store = await createSourceStore(api, user.token, rst.id, { pricingConfig: { type: 'percentage', value } });
    expect(store.pricingConfig).toEqual({ type: 'percentage', value });
  });

  it('allows several source stores on one shop domain (e.g. one per vendor tag)', async ({ api, user }) => {
    const rst = await createResellerStore(api, user.token);
    const first = await createSourceStore(api, user.token, rst.id);
    const second = await createSourceStore(api, user.token, rst.id, { shopDomain: first.shopDomain });
    expect(second.shopDomain).toBe(first.shopDomain);
  });

  it.for([
    ['a missing name', { name: undefined }, 'name'],
    ['a name over 200 characters', { name: 'n'.repeat(201) }, 'name'],
    ['an unknown platform', { platform: 'magento' }, 'platform'],
    ['an invalid shop domain', { shopDomain: 'not a domain' }, 'shopDomain'],
    ['a missing vendor tag', { vendorTag: undefined }, 'vendorTag'],
    ['a blank vendor tag', { vendorTag: '   ' }, 'vendorTag'],
    ['an unknown pricing mode', { pricingMode: 'fixed' }, 'pricingMode'],
    ['a missing pricing config', { pricingConfig: undefined }, 'pricingConfig'],
    ['a pricing config of unknown type', { pricingConfig: { type: 'fixed', value: 1 } }, 'pricingConfig.type'],
    ['a markup of -100%', { pricingConfig: { type: 'percentage', value: -100 } }, 'pricingConfig.value'],
    ['a markup over 1000%', { pricingConfig: { type: 'percentage', value: 1000.5 } }, 'pricingConfig.value'],
    ['a string markup', { pricingConfig: { type: 'percentage', value: '25' } }, 'pricingConfig.value'],
    ['an unknown pricing config field', { pricingConfig: { type: 'percentage', value: 5, extra: 1 } }, 'pricingConfig.extra'],
    [
      'an invalid rule',
      { pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules: [{ field: 'price', op: 'multiply', value: 0 }] } },
      'pricingConfig.rules.0.value',
    ],
    ['a missing access token', { accessToken: undefined }, 'accessToken'],
    ['a missing webhook secret', { webhookSecret: undefined }, 'webhookSecret'],
    ['a price set to 1e20', fieldRules({ field: 'price', op: 'set', value: 1e20 }), 'pricingConfig.rules.0.value'],
    ['a price set above the limit', fieldRules({ field: 'price', op: 'set', value: 1_000_000_000_001 }), 'pricingConfig.rules.0.value'],
    ['an add of 1e300 after a valid rule', fieldRules({ field: 'sku', op: 'set', value: 'x' }, { field: 'price', op: 'add', value: 1e300 }), 'pricingConfig.rules.1.value'],
    ['an add of -1e13', fieldRules({ field: 'price', op: 'add', value: -1e13 }), 'pricingConfig.rules.0.value'],
    ['a fractional add', fieldRules({ field: 'price', op: 'add', value: 0.5 }), 'pricingConfig.rules.0.value'],
    ['a multiply by 1e300', fieldRules({ field: 'price', op: 'multiply', value: 1e300 }), 'pricingConfig.rules.0.value'],
    ['an access token with CR/LF', { accessToken: 'tok\r\nX-Injected: 1' }, 'accessToken'],
    ['an access token with a tab', { accessToken: 'tok\tsecond' }, 'accessToken'],
    ['an access token with a NUL', { accessToken: 'tok\u0000' }, 'accessToken'],
    ['an access token with characters a header cannot carry', { accessToken: 'tok€' }, 'accessToken'],
    ['an access token over 4096 characters', { accessToken: 't'.repeat(4097) }, 'accessToken'],
    ['a webhook secret with a line feed', { webhookSecret: 'sec\nret' }, 'webhookSecret'],
    ['a webhook secret with a DEL', { webhookSecret: 'sec\u007f' }, 'webhookSecret'],
    ['a webhook secret over 1024 characters', { webhookSecret: 's'.repeat(1025) }, 'webhookSecret'],
  ] as const)('rejects %s with 400 naming the field', async ([_label, overrides, param], { api, user }) => {
    const rst = await createResellerStore(api, user.token);
    expectError(await api.post(base(rst.id), { token: user.token, body: validSource(overrides) }), 400, 'validation_failed', param);
  });

  it.for([
    ['percentage', { type: 'field_rules', rules: [] }],
    ['field_rules', { type: 'percentage', value: 10 }],
  ] as const)('rejects pricingMode %s with a config of the other type', async ([pricingMode, pricingConfig], { api, user }) => {
    const rst = await createResellerStore(api, user.token);
    const response = await api.post(base(rst.id), { token: user.token, body: validSource({ pricingMode, pricingConfig }) });
    expectError(response, 400, 'validation_failed', 'pricingConfig.type');
    expect((await api.get(base(rst.id), { token: user.token })).body.data).toEqual([]);
  });

  it('answers 404 for an unknown or deleted reseller store', async ({ api, user }) => {
    expectError(await api.post(base('rst_missing'), { token: user.token, body: validSource() }), 404, 'not_found');
    const rst = await createResellerStore(api, user.token);
    await api.delete(`/v1/reseller_stores/${rst.id}`, { token: user.token });
    expectError(await api.post(base(rst.id), { token: user.token, body: validSource() }), 404, 'not_found');
  });

  describe('vendor tags', () => {
    it('answers 409 vendor_tag_taken for a tag an active sibling has, ignoring case and surrounding space', async ({ api, user }) => {
      const rst = await createResellerStore(api, user.token);
      const tag = `Acme Tools ${unique()}`;
      await createSourceStore(api, user.token, rst.id, { vendorTag: tag });
      for (const variant of [tag, tag.toUpperCase(), `  ${tag.toLowerCase()}\t`]) {
        const response = await api.post(base(rst.id), { token: user.token, body: validSource({ vendorTag: variant }) });
        expectError(response, 409, 'conflict', 'vendorTag');
        expect(response.body.error.details).toEqual({ reason: 'vendor_tag_taken' });
      }
      expect((await api.get(base(rst.id), { token: user.token })).body.data).toHaveLength(1);
    });

    it('gives a tag to exactly one of several racing requests', async ({ api, user }) => {
      const rst = await createResellerStore(api, user.token);
      const tag = `Race ${unique()}`;
      const results = await Promise.all(
        [tag, tag.toLowerCase(), ` ${tag.toUpperCase()} `].map((vendorTag) =>
          api.post(base(rst.id), { token: user.token, body: validSource({ vendorTag }) }),
        ),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
      expect((await api.get(base(rst.id), { token: user.token })).body.data).toHaveLength(1);
    });

    it('measures the 200-character limit on the tag as matched (lower-cased), answering 400 rather than failing', async ({ api, user }) => {
      const rst = await createResellerStore(api, user.token);
      // 'İ' lower-cases to two characters ('i' and a combining dot).
      const fits = await createSourceStore(api, user.token, rst.id, { vendorTag: '\u0130'.repeat(100) });
      expect(fits.vendorTag).toBe('\u0130'.repeat(100));
      const tooLong = await api.post(base(rst.id), { token: user.token, body: validSource({ vendorTag: '\u0130'.repeat(101) }) });
      expectError(tooLong, 400, 'validation_failed', 'vendorTag');
    });

    it('allows the same tag under another reseller store', async ({ api, user }) => {
      const tag = `Shared ${unique()}`;
      const a = await createResellerStore(api, user.token);
      const b = await createResellerStore(api, user.token);
      await createSourceStore(api, user.token, a.id, { vendorTag: tag });
      expect((await createSourceStore(api, user.token, b.id, { vendorTag: tag })).vendorTag).toBe(tag);
    });

    it('frees the tag when its source store is deleted', async ({ api, user }) => {
      const rst = await createResellerStore(api, user.token);
      const tag = `Reuse ${unique()}`;
      const first = await createSourceStore(api, user.token, rst.id, { vendorTag: tag });
      expect((await api.delete(`${base(rst.id)}/${first.id}`, { token: user.token })).status).toBe(204);
      const second = await createSourceStore(api, user.token, rst.id, { vendorTag: tag.toUpperCase() });
      expect(second.id).not.toBe(first.id);
    });
  });
});

describe('GET /v1/reseller_stores/{rst_id}/source_stores/{id}', () => {
  it('returns the source store', async ({ api, user }) => {
    const rst = await createResellerStore(api, user.token);
    const store = await createSourceStore(api, user.token, rst.id);
    const response = await api.get(`${base(rst.id)}/${store.id}`, { token: user.token });
    expect(response.status).toBe(200);
    const { request_id: _a, ...got } = response.body;
    const { request_id: _b, ...created } = store;
    expect(got).toEqual(created);
  });

  it('answers 404 for an unknown id, or a source store under another of the caller\'s reseller stores', async ({ api, user }) => {
    const rst = await createResellerStore(api, user.token);
    const sibling = await createResellerStore(api, user.token);
    const store = await createSourceStore(api, user.token, rst.id);
    expectError(await api.get(`${base(rst.id)}/sst_missing`, { token: user.token }), 404, 'not_found');
    expectError(await api.get(`${base(sibling.id)}/${store.id}`, { token: user.token }), 404, 'not_found');
    expectError(await api.get(`${base('rst_missing')}/${store.id}`, { token: user.token }), 404, 'not_found');
  });
});

describe('GET /v1/reseller_stores/{rst_id}/source_stores', () => {
  let rstId: string;
  let newestFirst: string[];
  it.beforeAll(async ({ api, user }) => {
    const rst = await createResellerStore(api, user.token);
    rstId = rst.id;
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await createSourceStore(api, user.token, rst.id, { name: `Supplier ${i}` }));
    newestFirst = created.map((store) => store.id).reverse();
    // Stores of another reseller store never show up here.
    const other = await createResellerStore(api, user.token);
    await createSourceStore(api, user.token, other.id);
  });
  const list = (api: ApiClient, user: TestUser, query = '') => api.get(`${base(rstId)}${query}`, { token: user.token });

  it('lists newest first in the list envelope', async ({ api, user }) => {
    const response = await list(api, user);
    expect(response.status).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual(['data', 'has_more', 'object', 'request_id', 'url']);
    expect(response.body).toMatchObject({ object: 'list', has_more: false, url: base(rstId) });
    expect(ids(response.body)).toEqual(newestFirst);
    for (const store of response.body.data) expect(Object.keys(store).sort()).toEqual(SOURCE_FIELDS);
  });

  it('pages with limit, starting_after and ending_before', async ({ api, user }) => {
    const page1 = await list(api, user, '?limit=2');
    expect(ids(page1.body)).toEqual(newestFirst.slice(0, 2));
    expect(page1.body.has_more).toBe(true);
    expect(page1.body.url).toBe(base(rstId));
    const page2 = await list(api, user, `?limit=2&starting_after=${newestFirst[1]}`);
    expect(ids(page2.body)).toEqual(newestFirst.slice(2, 4));
    expect(page2.body.has_more).toBe(true);
    const page3 = await list(api, user, `?limit=2&starting_after=${newestFirst[3]}`);
    expect(ids(page3.body)).toEqual(newestFirst.slice(4));
    expect(page3.body.has_more).toBe(false);
    const back = await list(api, user, `?limit=3&ending_before=${newestFirst[4]}`);
    expect(ids(back.body)).toEqual(newestFirst.slice(1, 4));
    expect(back.body.has_more).toBe(true);
    const top = await list(api, user, `?ending_before=${newestFirst[1]}`);
    expect(ids(top.body)).toEqual(newestFirst.slice(0, 1));
    expect(top.body.has_more).toBe(false);
  });

  it('rejects bad paging with 400', async ({ api, user }) => {
    expectError(await list(api, user, '?limit=0'), 400, 'validation_failed', 'limit');
    expectError(await list(api, user, '?limit=101'), 400, 'validation_failed', 'limit');
    expectError(await list(api, user, `?starting_after=${newestFirst[0]}&ending_before=${newestFirst[2]}`), 400, 'validation_failed');
  });

  it('leaves out deleted source stores', async ({ api, user }) => {
    const rst = await createResellerStore(api, user.token);
    const kept = await createSourceStore(api, user.token, rst.id);
    const gone = await createSourceStore(api, user.token, rst.id);
    await api.delete(`${base(rst.id)}/${gone.id}`, { token: user.token });
    expect(ids((await api.get(base(rst.id), { token: user.token })).body)).toEqual([kept.id]);
  });

  it('answers 404 for an unknown reseller store', async ({ api, user }) => {
    expectError(await api.get(base('rst_missing'), { token: user.token }), 404, 'not_found');
  });
});

describe('PATCH /v1/reseller_stores/{rst_id}/source_stores/{id}', () => {
  let rstId: string;
  it.beforeAll(async ({ api, user }) => {
    rstId = (await createResellerStore(api, user.token)).id;
  });
  const patch = (api: ApiClient, user: TestUser, id: string, body: unknown) => api.patch(`${base(rstId)}/${id}`, { token: user.token, body });
  const get = async (api: ApiClient, user: TestUser, id: string) => (await api.get(`${base(rstId)}/${id}`, { token: user.token })).body;

  it('renames', async ({ api, user }) => {
    const store = await createSourceStore(api, user.token, rstId);
    const response = await patch(api, user, store.id, { name: 'Renamed supplier' });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ id: store.id, name: 'Renamed supplier', vendorTag: store.vendorTag, pricingConfig: store.pricingConfig });
    expect((await get(api, user, store.id)).name).toBe('Renamed supplier');
  });

  it('changes the markup within the same mode', async ({ service, api, user }) => {
    const store = await createSourceStore(api, user.token, rstId);
    const response = await patch(api, user, store.id, { pricingConfig: { type: 'percentage', value: 42.5 } });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.pricingConfig).toEqual({ type: 'percentage', value: 42.5 });
    expect((await get(api, user, store.id)).pricingConfig).toEqual({ type: 'percentage', value: 42.5 });
    const [row] = await queryRows(service.databaseUrl, 'select pricing_config from source_stores where id = $1', [store.id]);
    expect(row!.pricing_config).toEqual({ type: 'percentage', value: 42.5 });
  });

  it('switches mode together with a config of the new type, leaving nothing of the old config', async ({ service, api, user }) => {
    const store = await createSourceStore(api, user.token, rstId);
    const response = await patch(api, user, store.id, { pricingMode: 'field_rules', pricingConfig: FIELD_RULES });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.pricingMode).toBe('field_rules');
    expect(response.body.pricingConfig).toEqual(FIELD_RULES);
    const [row] = await queryRows(service.databaseUrl, 'select pricing_mode, pricing_config from source_stores where id = $1', [store.id]);
    expect(row).toEqual({ pricing_mode: 'field_rules', pricing_config: FIELD_RULES });

    const back = await patch(api, user, store.id, { pricingMode: 'percentage', pricingConfig: { type: 'percentage', value: 5 } });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.pricingConfig).toEqual({ type: 'percentage', value: 5 });
    expect((await get(api, user, store.id)).pricingConfig).toEqual({ type: 'percentage', value: 5 });
  });

  it.for([
    ['a mode without a matching config', { pricingMode: 'field_rules' }],
    ['a config that disagrees with the current mode', { pricingConfig: { type: 'field_rules', rules: [] } }],
    ['a mode and config that disagree', { pricingMode: 'percentage', pricingConfig: { type: 'field_rules', rules: [] } }],
  ] as const)('rejects %s with 400 and changes nothing', async ([_label, body], { api, user }) => {
    const store = await createSourceStore(api, user.token, rstId);
    expectError(await patch(api, user, store.id, body), 400, 'validation_failed', 'pricingConfig.type');
    expect(await get(api, user, store.id)).toMatchObject({ pricingMode: 'percentage', pricingConfig: store.pricingConfig });
  });

  it.for([
    ['vendorTag', { vendorTag: 'Other' }],
    ['shopDomain', { shopDomain: 'other.example.com' }],
    ['platform', { platform: 'custom' }],
    ['resellerStoreId', { resellerStoreId: 'rst_other' }],
  ] as const)('rejects the unknown or read-only field %s with 400', async ([param, body], { api, user }) => {
    const store = await createSourceStore(api, user.token, rstId);
    expectError(await patch(api, user, store.id, body), 400, 'validation_failed', param);
    expect(await get(api, user, store.id)).toMatchObject({ vendorTag: store.vendorTag, shopDomain: store.shopDomain, platform: store.platform });
  });

  it('rejects an invalid name and markup with 400', async ({ api, user }) => {
    const store = await createSourceStore(api, user.token, rstId);
    expectError(await patch(api, user, store.id, { name: '' }), 400, 'validation_failed', 'name');
    expectError(await patch(api, user, store.id, { pricingConfig: { type: 'percentage', value: 2000 } }), 400, 'validation_failed', 'pricingConfig.value');
  });

  it.for([
    ['set: 1e20', { field: 'price', op: 'set', value: 1e20 }],
    ['add: 1e300', { field: 'price', op: 'add', value: 1e300 }],
    ['add: -1e13', { field: 'price', op: 'add', value: -1e13 }],
  ] as const)('rejects a price rule beyond the amount limit (%s) with 400 and changes nothing', async ([_label, rule], { api, user }) => {
    const store = await createSourceStore(api, user.token, rstId);
    const config = { type: 'field_rules', rules: [{ field: 'sku', op: 'prefix', value: 'S-' }, rule] };
    expectError(await patch(api, user, store.id, { pricingMode: 'field_rules', pricingConfig: config }), 400, 'validation_failed', 'pricingConfig.rules.1.value');
    expect(await get(api, user, store.id)).toMatchObject({ pricingMode: 'percentage', pricingConfig: store.pricingConfig });
  });

  it('accepts price rules at the limits', async ({ api, user }) => {
    const store = await createSourceStore(api, user.token, rstId);
    const rules = [
      { field: 'price', op: 'set', value: 1_000_000_000_000 },
      { field: 'price', op: 'add', value: -1_000_000_000_000 },
      { field: 'price', op: 'multiply', value: 1000 },
    ];
    const response = await patch(api, user, store.id, { pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules } });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
  });

  it('accepts an empty body', async ({ api, user }) => {
    const store = await createSourceStore(api, user.token, rstId);
    const response = await patch(api, user, store.id, {});
    expect(response.status).toBe(200);
    expect(response.body.name).toBe(store.name);
  });

  it('answers 404 for an unknown or deleted source store', async ({ api, user }) => {
    expectError(await patch(api, user, 'sst_missing', { name: 'x' }), 404, 'not_found');
    const store = await createSourceStore(api, user.token, rstId);
    await api.delete(`${base(rstId)}/${store.id}`, { token: user.token });
    expectError(await patch(api, user, store.id, { name: 'x' }), 404, 'not_found');
  });
});

describe('DELETE /v1/reseller_stores/{rst_id}/source_stores/{id}', () => {
  it('deletes once under concurrent DELETEs: one 204 and one audit entry, every other 404, deletedAt written once', async ({ service, api, user }) => {
    const deletions = await watchColumnWrites(service.databaseUrl, 'source_stores', 'deleted_at');
    const rst = await createResellerStore(api, user.token);
    const store = await createSourceStore(api, user.token, rst.id);
    const responses = await Promise.all(Array.from({ length: 20 }, () => api.delete(`${base(rst.id)}/${store.id}`, { token: user.token })));
    expect(responses.filter((response) => response.status === 204)).toHaveLength(1);
    for (const response of responses.filter((r) => r.status !== 204)) expectError(response, 404, 'not_found');
    expect(await deletions(store.id)).toHaveLength(1);
    const audit = await queryRows(service.databaseUrl, "select id from audit_entries where resource_id = $1 and action = 'source_store.deleted'", [store.id]);
    expect(audit).toHaveLength(1);
  });

  it('soft-deletes: 204, row kept with deleted_at, GET shows deletedAt', async ({ service, api, user }) => {
    const rst = await createResellerStore(api, user.token);
    const store = await createSourceStore(api, user.token, rst.id);
    const response = await api.delete(`${base(rst.id)}/${store.id}`, { token: user.token });
    expect(response.status).toBe(204);
    expect(response.body).toBeUndefined();

    const [row] = await queryRows<{ deleted_at: Date | null; vendor_tag: string }>(
      service.databaseUrl,
      'select deleted_at, vendor_tag from source_stores where id = $1',
      [store.id],
    );
    expect(row!.deleted_at).toBeInstanceOf(Date);
    expect(row!.vendor_tag).toBe(store.vendorTag);

    const got = await api.get(`${base(rst.id)}/${store.id}`, { token: user.token });
    expect(got.status).toBe(200);
    expect(got.body.deletedAt).toMatch(ISO_UTC);

    expectError(await api.delete(`${base(rst.id)}/${store.id}`, { token: user.token }), 404, 'not_found');
  });

  it('answers 404 for an unknown id or the wrong reseller store', async ({ api, user }) => {
    const rst = await createResellerStore(api, user.token);
    const sibling = await createResellerStore(api, user.token);
    const store = await createSourceStore(api, user.token, rst.id);
    expectError(await api.delete(`${base(rst.id)}/sst_missing`, { token: user.token }), 404, 'not_found');
    expectError(await api.delete(`${base(sibling.id)}/${store.id}`, { token: user.token }), 404, 'not_found');
    expect((await api.get(`${base(rst.id)}/${store.id}`, { token: user.token })).body.deletedAt).toBeNull();
  });
});
