import { createHash } from 'node:crypto';
import { describe, expect } from 'vitest';
import type { ApiClient, ApiResponse } from './support/api.ts';
import { expectError, ISO_UTC } from './support/assertions.ts';
import { queryRows, watchColumnWrites } from './support/database.ts';
import { createResellerStore, registerUser, type TestUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';

const API_KEY_FIELDS = ['createdAt', 'environment', 'id', 'lastUsedAt', 'name', 'ownerId', 'prefix', 'revokedAt'];

async function createKey(api: ApiClient, user: TestUser, environment: 'live' | 'test', name = `key ${environment}`) {
  const response = await api.post('/v1/api_keys', { token: user.token, body: { name, environment } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body as { id: string; raw_key: string; ownerId: string; prefix: string };
}

async function userId(api: ApiClient, token: string): Promise<string> {
  return (await api.get('/v1/auth/me', { token })).body.id;
}

/** No response may carry the raw key or its hash once the create response is gone. */
function expectNoSecret(response: ApiResponse, rawKey: string) {
  const text = JSON.stringify(response.body);
  expect(text).not.toContain(rawKey);
  expect(text).not.toContain(rawKey.slice(8));
  expect(text).not.toContain(createHash('sha256').update(rawKey).digest('hex'));
  expect(text).not.toMatch(/raw_key|keyHash|key_hash/);
}

describe('POST /v1/api_keys', () => {
  it.for([
    ['live', 'sk_live_'],
    ['test', 'sk_test_'],
  ] as const)('creates a %s key with prefix %s; the raw key only in this response', async ([environment, prefix], { api }) => {
    const user = await registerUser(api);
    const response = await api.post('/v1/api_keys', { token: user.token, body: { name: 'CI deploys', environment } });
    expect(response.status).toBe(201);
    expect(Object.keys(response.body).sort()).toEqual([...API_KEY_FIELDS, 'raw_key', 'request_id'].sort());
    expect(response.body).toMatchObject({
      name: 'CI deploys',
      environment,
      prefix,
      ownerId: await userId(api, user.token),
      lastUsedAt: null,
      revokedAt: null,
    });
    expect(response.body.id).toMatch(/^key_[0-9a-f]{32}$/);
    expect(response.body.createdAt).toMatch(ISO_UTC);
    // Prefix, then 32 random bytes in base64url (43 characters, no padding).
    expect(response.body.raw_key).toMatch(new RegExp(`^${prefix}[A-Za-z0-9_-]{43}$`));

    const me = await api.get('/v1/auth/me', { token: response.body.raw_key });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(response.body.ownerId);
  });

  it('gives every key a different raw key', async ({ api }) => {
    const user = await registerUser(api);
    const keys = await Promise.all([1, 2, 3].map(() => createKey(api, user, 'test')));
    expect(new Set(keys.map((key) => key.raw_key)).size).toBe(3);
  });

  it.for([
    ['a missing name', { environment: 'live' }, 'name'],
    ['an empty name', { name: '  ', environment: 'live' }, 'name'],
    ['a name over 200 characters', { name: 'n'.repeat(201), environment: 'live' }, 'name'],
    ['a missing environment', { name: 'k' }, 'environment'],
    ['an unknown environment', { name: 'k', environment: 'production' }, 'environment'],
  ] as const)('rejects %s with 400', async ([_label, body, param], { api, user }) => {
    expectError(await api.post('/v1/api_keys', { token: user.token, body }), 400, 'validation_failed', param);
  });

  it('requires authentication', async ({ api }) => {
    expectError(await api.post('/v1/api_keys', { body: { name: 'k', environment: 'live' } }), 401, 'unauthorized');
  });
});

describe('GET /v1/api_keys and GET /v1/api_keys/{id}', () => {
  it('lists the caller\'s keys newest first, paged, never with the raw key or hash', async ({ api }) => {
    const user = await registerUser(api);
    const other = await registerUser(api);
    await createKey(api, other, 'live');
    const keys = [];
    for (let i = 0; i < 5; i++) keys.push(await createKey(api, user, i % 2 ? 'live' : 'test', `key ${i}`));
    const newestFirst = keys.map((key) => key.id).reverse();

    const all = await api.get('/v1/api_keys', { token: user.token });
    expect(all.status).toBe(200);
    expect(Object.keys(all.body).sort()).toEqual(['data', 'has_more', 'object', 'request_id', 'url']);
    expect(all.body).toMatchObject({ object: 'list', has_more: false, url: '/v1/api_keys' });
    expect(all.body.data.map((key: { id: string }) => key.id)).toEqual(newestFirst);
    for (const key of all.body.data) expect(Object.keys(key).sort()).toEqual(API_KEY_FIELDS);

    const page1 = await api.get('/v1/api_keys?limit=2', { token: user.token });
    expect(page1.body.data.map((key: { id: string }) => key.id)).toEqual(newestFirst.slice(0, 2));
    expect(page1.body.has_more).toBe(true);
    const page2 = await api.get(`/v1/api_keys?limit=2&starting_after=${newestFirst[1]}`, { token: user.token });
    expect(page2.body.data.map((key: { id: string }) => key.id)).toEqual(newestFirst.slice(2, 4));
    expect(page2.body.has_more).toBe(true);
    const page3 = await api.get(`/v1/api_keys?limit=2&starting_after=${newestFirst[3]}`, { token: user.token });
    expect(page3.body.data.map((key: { id: string }) => key.id)).toEqual(newestFirst.slice(4));
    expect(page3.body.has_more).toBe(false);
    const back = await api.get(`/v1/api_keys?limit=2&ending_before=${newestFirst[4]}`, { token: user.token });
    expect(back.body.data.map((key: { id: string }) => key.id)).toEqual(newestFirst.slice(2, 4));
    expect(back.body.has_more).toBe(true);

    for (const response of [all, page1, page2, page3, back]) {
      for (const key of keys) expectNoSecret(response, key.raw_key);
    }
    for (const key of keys) {
      const one = await api.get(`/v1/api_keys/${key.id}`, { token: user.token });
      expect(one.status).toBe(200);
      expect(Object.keys(one.body).sort()).toEqual([...API_KEY_FIELDS, 'request_id'].sort());
      expect(one.body.id).toBe(key.id);
      expectNoSecret(one, key.raw_key);
    }
  });

  it('answers 404 for an unknown id and 400 for bad paging', async ({ api, user }) => {
    expectError(await api.get('/v1/api_keys/key_00000000000000000000000000000000', { token: user.token }), 404, 'not_found');
    expectError(await api.get('/v1/api_keys?limit=0', { token: user.token }), 400, 'validation_failed', 'limit');
    expectError(await api.get('/v1/api_keys?limit=101', { token: user.token }), 400, 'validation_failed', 'limit');
    expectError(
      await api.get('/v1/api_keys?starting_after=key_a&ending_before=key_b', { token: user.token }),
      400,
      'validation_failed',
    );
  });
});

describe('DELETE /v1/api_keys/{id}', () => {
  it('revokes the key: 204, every later request with it is 401, and it stays listed with revokedAt', async ({ api }) => {
    const user = await registerUser(api);
    const key = await createKey(api, user, 'live');
    const keep = await createKey(api, user, 'test');
    const store = await createResellerStore(api, user.token);
    expect((await api.get('/v1/reseller_stores', { token: key.raw_key })).status).toBe(200);

    const revoked = await api.delete(`/v1/api_keys/${key.id}`, { token: user.token });
    expect(revoked.status).toBe(204);
    expect(revoked.body).toBeUndefined();

    const attempts: [string, string, unknown?][] = [
      ['GET', '/v1/auth/me'],
      ['GET', '/v1/api_keys'],
      ['GET', `/v1/api_keys/${key.id}`],
      ['POST', '/v1/api_keys', { name: 'escalate', environment: 'live' }],
      ['DELETE', `/v1/api_keys/${keep.id}`],
      ['GET', '/v1/reseller_stores'],
      ['GET', `/v1/reseller_stores/${store.id}`],
      ['POST', '/v1/reseller_stores', { name: 'x', platform: 'custom', shopDomain: 'x.example.com', accessToken: 'a', webhookSecret: 'b' }],
      ['PATCH', `/v1/reseller_stores/${store.id}`, { name: 'renamed' }],
      ['DELETE', `/v1/reseller_stores/${store.id}`],
      ['GET', '/v1/audit_log'],
    ];
    for (const [method, path, body] of attempts) {
      const response = await api.request(method, path, { token: key.raw_key, body });
      expect(response.status, `${method} ${path}`).toBe(401);
      expectError(response, 401, 'unauthorized');
    }
    // Nothing the revoked key tried went through.
    expect((await api.get(`/v1/reseller_stores/${store.id}`, { token: user.token })).body).toMatchObject({
      name: store.name,
      deletedAt: null,
    });
    expect((await api.get(`/v1/api_keys/${keep.id}`, { token: user.token })).body.revokedAt).toBeNull();
    expect((await api.get('/v1/auth/me', { token: keep.raw_key })).status).toBe(200);

    const listed = await api.get('/v1/api_keys', { token: user.token });
    const entry = listed.body.data.find((item: { id: string }) => item.id === key.id);
    expect(entry.revokedAt).toMatch(ISO_UTC);
    expect(Math.abs(Date.parse(entry.revokedAt) - Date.now())).toBeLessThan(60_000);

    // Revoking again is harmless and keeps the first revocation time.
    expect((await api.delete(`/v1/api_keys/${key.id}`, { token: user.token })).status).toBe(204);
    expect((await api.get(`/v1/api_keys/${key.id}`, { token: user.token })).body.revokedAt).toBe(entry.revokedAt);
  });

  it('answers 404 for an unknown id', async ({ api, user }) => {
    expectError(await api.delete('/v1/api_keys/key_missing', { token: user.token }), 404, 'not_found');
  });

  it('revokes once under concurrent DELETEs: every one answers 204, revokedAt is written once and kept', async ({ service, api, user }) => {
    const revocations = await watchColumnWrites(service.databaseUrl, 'api_keys', 'revoked_at');
    const key = await createKey(api, user, 'live');
    const responses = await Promise.all(Array.from({ length: 20 }, () => api.delete(`/v1/api_keys/${key.id}`, { token: user.token })));
    expect(responses.map((response) => response.status)).toEqual(Array(20).fill(204));
    const written = await revocations(key.id);
    expect(written).toHaveLength(1);
    expect(Date.parse((await api.get(`/v1/api_keys/${key.id}`, { token: user.token })).body.revokedAt)).toBe(Date.parse(written[0]!));
  });

});

describe('managing API keys needs a signed-in user (an access token), not an API key', () => {
  it.for(['test', 'live'] as const)('an sk_%s_ key cannot create a key of either environment: 401, nothing created', async (environment, { api }) => {
    const owner = await registerUser(api);
    const key = await createKey(api, owner, environment);
    for (const wanted of ['live', 'test']) {
      const response = await api.post('/v1/api_keys', { token: key.raw_key, body: { name: 'successor', environment: wanted } });
      expectError(response, 401, 'unauthorized');
      expect(response.body.error.details).toEqual({ reason: 'access_token_required' });
    }
    const listed = await api.get('/v1/api_keys', { token: owner.token });
    expect(listed.body.data.map((item: { id: string }) => item.id)).toEqual([key.id]);
  });

  it('an API key cannot revoke a key, not even itself: 401, the key stays active', async ({ api }) => {
    const owner = await registerUser(api);
    const key = await createKey(api, owner, 'live');
    const other = await createKey(api, owner, 'test');
    for (const target of [other, key]) {
      const response = await api.delete(`/v1/api_keys/${target.id}`, { token: key.raw_key });
      expectError(response, 401, 'unauthorized');
      expect(response.body.error.details).toEqual({ reason: 'access_token_required' });
    }
    expect((await api.get('/v1/auth/me', { token: key.raw_key })).status).toBe(200);
    expect((await api.get(`/v1/api_keys/${other.id}`, { token: owner.token })).body.revokedAt).toBeNull();
    // The signed-in user can.
    expect((await api.delete(`/v1/api_keys/${key.id}`, { token: owner.token })).status).toBe(204);
    expectError(await api.get('/v1/auth/me', { token: key.raw_key }), 401, 'unauthorized');
  });

  it('an API key still reads its owner\'s keys', async ({ api }) => {
    const owner = await registerUser(api);
    const key = await createKey(api, owner, 'test');
    expect((await api.get('/v1/api_keys', { token: key.raw_key })).status).toBe(200);
    expect((await api.get(`/v1/api_keys/${key.id}`, { token: key.raw_key })).status).toBe(200);
  });

  it('says so in the contract: the two operations accept only the bearer access token', async ({ api }) => {
    const document = (await api.get('/openapi.json')).body;
    expect(document.paths['/v1/api_keys'].post.security).toEqual([{ bearerAuth: [] }]);
    expect(document.paths['/v1/api_keys/{id}'].delete.security).toEqual([{ bearerAuth: [] }]);
    expect(document.paths['/v1/api_keys'].get.security).toEqual([{ bearerAuth: [] }, { apiKeyAuth: [] }]);
    expect(document.paths['/v1/api_keys'].post.description).toMatch(/access token/);
  });
});

describe('API keys act as their owner', () => {
  it.for(['live', 'test'] as const)('a %s key creates a reseller store owned by the user, audited as via api_key', async (environment, { api }) => {
    const user = await registerUser(api);
    const owner = await userId(api, user.token);
    const key = await createKey(api, user, environment);
    const store = await createResellerStore(api, key.raw_key);
    expect(store.ownerId).toBe(owner);

    // The JWT sees the store the key created: same owner, same workspace.
    expect((await api.get(`/v1/reseller_stores/${store.id}`, { token: user.token })).status).toBe(200);

    const audit = await api.get(`/v1/audit_log?reseller_store_id=${store.id}&action=reseller_store.created`, { token: user.token });
    expect(audit.status).toBe(200);
    expect(audit.body.data).toHaveLength(1);
    expect(audit.body.data[0].actorId).toBe(key.id);
    expect(audit.body.data[0].metadata).toMatchObject({ via: 'api_key', apiKeyId: key.id, environment });
    expectNoSecret(audit, key.raw_key);

    const viaJwt = await createResellerStore(api, user.token);
    const jwtAudit = await api.get(`/v1/audit_log?reseller_store_id=${viaJwt.id}`, { token: key.raw_key });
    expect(jwtAudit.body.data[0].actorId).toBe(owner);
    expect(jwtAudit.body.data[0].metadata).toMatchObject({ via: 'jwt' });
    expect(jwtAudit.body.data[0].metadata).not.toHaveProperty('environment');
  });

  it('sets lastUsedAt when the key is used', async ({ api }) => {
    const user = await registerUser(api);
    const key = await createKey(api, user, 'live');
    expect((await api.get(`/v1/api_keys/${key.id}`, { token: user.token })).body.lastUsedAt).toBeNull();

    const before = Date.now();
    // The key reading itself already sees this use.
    const self = await api.get(`/v1/api_keys/${key.id}`, { token: key.raw_key });
    expect(self.status).toBe(200);
    expect(self.body.lastUsedAt).toMatch(ISO_UTC);

    const seen = await api.get(`/v1/api_keys/${key.id}`, { token: user.token });
    expect(seen.body.lastUsedAt).toMatch(ISO_UTC);
    expect(Date.parse(seen.body.lastUsedAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(seen.body.lastUsedAt)).toBeLessThanOrEqual(Date.now() + 1000);
  });
});

describe('storage', () => {
  it('stores only a SHA-256 hash of the raw key', async ({ service, api }) => {
    const user = await registerUser(api);
    const key = await createKey(api, user, 'live');
    const rows = await queryRows(service.databaseUrl, 'select * from api_keys where id = $1', [key.id]);
    expect(rows).toHaveLength(1);
    const text = JSON.stringify(rows[0]);
    expect(text).not.toContain(key.raw_key);
    expect(text).not.toContain(key.raw_key.slice('sk_live_'.length));
    expect(rows[0]!.key_hash).toBe(createHash('sha256').update(key.raw_key).digest('hex'));
    expect(rows[0]!.prefix).toBe('sk_live_');

    // Nowhere else in the database either (audit metadata, other tables).
    const dump = await queryRows<{ t: string }>(
      service.databaseUrl,
      `select concat_ws(' ', (select string_agg(a::text, ' ') from audit_entries a), (select string_agg(u::text, ' ') from users u)) as t`,
    );
    expect(dump[0]!.t ?? '').not.toContain(key.raw_key.slice('sk_live_'.length));
  });
});
