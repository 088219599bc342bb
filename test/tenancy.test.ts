import { randomBytes } from 'node:crypto';
import { describe, expect } from 'vitest';
import { expectError, withoutRequestId } from './support/assertions.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';
import type { TestService } from './support/service.ts';

/**
 * A user reaches only their own reseller stores and what is under them; anyone else's resource
 * answers exactly like one that does not exist (decisions.md, "Ownership").
 */

let alice: TestUser;
let bob: TestUser;
let aliceStore: { id: string; name: string };
let aliceSource: { id: string; name: string };
let aliceKey: { id: string; raw_key: string };
let bobStore: { id: string };
let bobKey: { raw_key: string };

const MISSING = {
  rst: 'rst_0000000000000000000000000000ffff',
  sst: 'sst_0000000000000000000000000000ffff',
  key: 'key_0000000000000000000000000000ffff',
};

const sourceBody = () => ({
  name: 'Intruder supplier',
  platform: 'custom',
  shopDomain: `intruder-${randomBytes(4).toString('hex')}.example.com`,
  accessToken: 'a',
  webhookSecret: 'b',
  vendorTag: `Intruder ${randomBytes(4).toString('hex')}`,
  pricingMode: 'percentage',
  pricingConfig: { type: 'percentage', value: 10 },
});

interface Case {
  label: string;
  method: string;
  /** The path to someone else's resource, and the same path with a missing id. */
  foreign: () => string;
  missing: () => string;
  body?: () => unknown;
  /** Only for a signed-in user: any API key is refused (401) before the id is looked at. */
  accessTokenOnly?: boolean;
}

const cases: Case[] = [
  { label: 'GET reseller store', method: 'GET', foreign: () => `/v1/reseller_stores/${aliceStore.id}`, missing: () => `/v1/reseller_stores/${MISSING.rst}` },
  {
    label: 'PATCH reseller store',
    method: 'PATCH',
    foreign: () => `/v1/reseller_stores/${aliceStore.id}`,
    missing: () => `/v1/reseller_stores/${MISSING.rst}`,
    body: () => ({ name: 'Hijacked' }),
  },
  { label: 'DELETE reseller store', method: 'DELETE', foreign: () => `/v1/reseller_stores/${aliceStore.id}`, missing: () => `/v1/reseller_stores/${MISSING.rst}` },
  {
    label: 'list source stores',
    method: 'GET',
    foreign: () => `/v1/reseller_stores/${aliceStore.id}/source_stores`,
    missing: () => `/v1/reseller_stores/${MISSING.rst}/source_stores`,
  },
  {
    label: 'create source store',
    method: 'POST',
    foreign: () => `/v1/reseller_stores/${aliceStore.id}/source_stores`,
    missing: () => `/v1/reseller_stores/${MISSING.rst}/source_stores`,
    body: sourceBody,
  },
  {
    label: 'GET source store',
    method: 'GET',
    foreign: () => `/v1/reseller_stores/${aliceStore.id}/source_stores/${aliceSource.id}`,
    missing: () => `/v1/reseller_stores/${MISSING.rst}/source_stores/${MISSING.sst}`,
  },
  {
    label: 'PATCH source store',
    method: 'PATCH',
    foreign: () => `/v1/reseller_stores/${aliceStore.id}/source_stores/${aliceSource.id}`,
    missing: () => `/v1/reseller_stores/${MISSING.rst}/source_stores/${MISSING.sst}`,
    body: () => ({ name: 'Hijacked', pricingConfig: { type: 'percentage', value: -50 } }),
  },
  {
    label: 'DELETE source store',
    method: 'DELETE',
    foreign: () => `/v1/reseller_stores/${aliceStore.id}/source_stores/${aliceSource.id}`,
    missing: () => `/v1/reseller_stores/${MISSING.rst}/source_stores/${MISSING.sst}`,
  },
  // Someone else's source store under one's own reseller store id.
  {
    label: 'GET source store via own reseller store',
    method: 'GET',
    foreign: () => `/v1/reseller_stores/${bobStore.id}/source_stores/${aliceSource.id}`,
    missing: () => `/v1/reseller_stores/${bobStore.id}/source_stores/${MISSING.sst}`,
  },
  {
    label: 'PATCH source store via own reseller store',
    method: 'PATCH',
    foreign: () => `/v1/reseller_stores/${bobStore.id}/source_stores/${aliceSource.id}`,
    missing: () => `/v1/reseller_stores/${bobStore.id}/source_stores/${MISSING.sst}`,
    body: () => ({ name: 'Hijacked' }),
  },
  {
    label: 'DELETE source store via own reseller store',
    method: 'DELETE',
    foreign: () => `/v1/reseller_stores/${bobStore.id}/source_stores/${aliceSource.id}`,
    missing: () => `/v1/reseller_stores/${bobStore.id}/source_stores/${MISSING.sst}`,
  },
  { label: 'GET API key', method: 'GET', foreign: () => `/v1/api_keys/${aliceKey.id}`, missing: () => `/v1/api_keys/${MISSING.key}` },
  { label: 'DELETE API key', method: 'DELETE', foreign: () => `/v1/api_keys/${aliceKey.id}`, missing: () => `/v1/api_keys/${MISSING.key}`, accessTokenOnly: true },
];

it.beforeAll(async ({ api }) => {
  [alice, bob] = await Promise.all([registerUser(api), registerUser(api)]);
  aliceStore = await createResellerStore(api, alice.token);
  aliceSource = await createSourceStore(api, alice.token, aliceStore.id);
  const key = await api.post('/v1/api_keys', { token: alice.token, body: { name: 'alice key', environment: 'live' } });
  aliceKey = key.body;
  bobStore = await createResellerStore(api, bob.token);
  bobKey = (await api.post('/v1/api_keys', { token: bob.token, body: { name: 'bob key', environment: 'test' } })).body;
});

/** Alice's resources are exactly as she left them. */
async function expectAliceUntouched(service: TestService) {
  const store = await service.api.get(`/v1/reseller_stores/${aliceStore.id}`, { token: alice.token });
  expect(store.body).toMatchObject({ name: aliceStore.name, deletedAt: null });
  const source = await service.api.get(`/v1/reseller_stores/${aliceStore.id}/source_stores/${aliceSource.id}`, { token: alice.token });
  expect(source.body).toMatchObject({ name: aliceSource.name, deletedAt: null, pricingConfig: { type: 'percentage', value: 25 } });
  const sources = await service.api.get(`/v1/reseller_stores/${aliceStore.id}/source_stores`, { token: alice.token });
  expect(sources.body.data.map((s: { id: string }) => s.id)).toEqual([aliceSource.id]);
  const [key] = await queryRows(service.databaseUrl, 'select revoked_at from api_keys where id = $1', [aliceKey.id]);
  expect(key!.revoked_at).toBeNull();
}

describe.each([
  ['a JWT', () => bob.token],
  ['an API key', () => bobKey.raw_key],
])('another user with %s', (label, credential) => {
  it.for(cases.map((c) => [c.label, c] as const))('%s: 404 not_found (an API key on a route only for a signed-in user: 401), indistinguishable from a missing id', async ([_name, c], { service, api }) => {
    const body = c.body?.();
    const foreign = await api.request(c.method, c.foreign(), { token: credential(), body });
    const missing = await api.request(c.method, c.missing(), { token: credential(), body });
    const [status, code] = c.accessTokenOnly && label === 'an API key' ? [401, 'unauthorized'] : [404, 'not_found'];
    expectError(foreign, status, code);
    expectError(missing, status, code);
    expect(withoutRequestId(foreign.body)).toEqual(withoutRequestId(missing.body));
    expect([...foreign.headers.keys()].sort()).toEqual([...missing.headers.keys()].sort());
    await expectAliceUntouched(service);
  });

  it('gets nothing from the audit log of another user\'s stores', async ({ api }) => {
    for (const query of [`reseller_store_id=${aliceStore.id}`, `resource_id=${aliceStore.id}`, `resource_id=${aliceSource.id}`]) {
      const response = await api.get(`/v1/audit_log?${query}`, { token: credential() });
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual([]);
    }
    const own = await api.get('/v1/audit_log?limit=100', { token: credential() });
    expect(own.body.data.length).toBeGreaterThan(0);
    for (const entry of own.body.data) expect(entry.resellerStoreId).toBe(bobStore.id);
  });

  it('sees none of the other user\'s resources in lists', async ({ api }) => {
    const stores = await api.get('/v1/reseller_stores?limit=100', { token: credential() });
    expect(stores.body.data.map((s: { id: string }) => s.id)).toEqual([bobStore.id]);
    const keys = await api.get('/v1/api_keys?limit=100', { token: credential() });
    expect(keys.body.data.map((k: { id: string }) => k.id)).not.toContain(aliceKey.id);
  });
});

describe('a revoked API key', () => {
  it('gets 401 unauthorized on every route, its owner\'s resources included', async ({ service, api }) => {
    const created = await api.post('/v1/api_keys', { token: alice.token, body: { name: 'to revoke', environment: 'test' } });
    const revokedKey: string = created.body.raw_key;
    expect((await api.get(`/v1/reseller_stores/${aliceStore.id}`, { token: revokedKey })).status).toBe(200);
    expect((await api.delete(`/v1/api_keys/${created.body.id}`, { token: alice.token })).status).toBe(204);

    for (const c of cases) {
      for (const path of [c.foreign(), c.missing()]) {
        const response = await api.request(c.method, path, { token: revokedKey, body: c.body?.() });
        expect(response.status, `${c.method} ${path}`).toBe(401);
        expectError(response, 401, 'unauthorized');
      }
    }
    for (const path of ['/v1/reseller_stores', '/v1/api_keys', `/v1/audit_log?reseller_store_id=${aliceStore.id}`, '/v1/auth/me']) {
      expectError(await api.get(path, { token: revokedKey }), 401, 'unauthorized');
    }
    await expectAliceUntouched(service);
  });
});
