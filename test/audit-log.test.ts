import { describe, expect } from 'vitest';
import { expectError, ISO_UTC } from './support/assertions.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';

const ENTRY_FIELDS = ['action', 'actorId', 'createdAt', 'id', 'metadata', 'resellerStoreId', 'resourceId', 'resourceType'];

interface Entry {
  id: string;
  action: string;
  resellerStoreId: string;
  resourceType: string;
  resourceId: string;
  actorId: string;
  metadata: Record<string, unknown>;
}

let userId: string;
let rst: { id: string };
let other: { id: string };
let source: { id: string };
/** Every entry of `user`, newest first, after the actions in beforeAll. */
let entries: Entry[];

/** GET /v1/audit_log as the file's user (or `token`). */
const it = test.extend('audit', { scope: 'file' }, ({ api, user }) =>
  (query = '', token = user.token) => api.get(`/v1/audit_log${query}`, { token }));

it.beforeAll(async ({ api, user, audit }) => {
  userId = (await api.get('/v1/auth/me', { token: user.token })).body.id;

  rst = await createResellerStore(api, user.token);
  source = await createSourceStore(api, user.token, rst.id);
  const paths = { rst: `/v1/reseller_stores/${rst.id}`, source: `/v1/reseller_stores/${rst.id}/source_stores/${source.id}` };
  expect((await api.patch(paths.source, { token: user.token, body: { name: 'Renamed supplier' } })).status).toBe(200);
  expect((await api.patch(paths.rst, { token: user.token, body: { name: 'Renamed shop' } })).status).toBe(200);
  expect((await api.delete(paths.source, { token: user.token })).status).toBe(204);
  other = await createResellerStore(api, user.token);
  expect((await api.delete(`/v1/reseller_stores/${other.id}`, { token: user.token })).status).toBe(204);

  const response = await audit('?limit=100');
  expect(response.status).toBe(200);
  entries = response.body.data;
});

describe('GET /v1/audit_log', () => {
  it('records store actions, newest first, in the list envelope', async ({ audit }) => {
    expect(entries.map((entry) => [entry.action, entry.resourceId])).toEqual([
      ['reseller_store.deleted', other.id],
      ['reseller_store.created', other.id],
      ['source_store.deleted', source.id],
      ['reseller_store.updated', rst.id],
      ['source_store.updated', source.id],
      ['source_store.created', source.id],
      ['reseller_store.created', rst.id],
    ]);
    const response = await audit();
    expect(Object.keys(response.body).sort()).toEqual(['data', 'has_more', 'object', 'request_id', 'url']);
    expect(response.body).toMatchObject({ object: 'list', has_more: false, url: '/v1/audit_log' });
    for (const entry of response.body.data) {
      expect(Object.keys(entry).sort()).toEqual(ENTRY_FIELDS);
      expect(entry.id).toMatch(/^aud_[0-9a-f]{32}$/);
      expect(entry.actorId).toBe(userId);
      expect(entry.metadata).toMatchObject({ via: 'jwt' });
      expect(entry.createdAt).toMatch(ISO_UTC);
    }
  });

  it('describes each action', () => {
    const byAction = (action: string, resourceId: string) => entries.find((e) => e.action === action && e.resourceId === resourceId)!;
    expect(byAction('reseller_store.created', rst.id)).toMatchObject({ resellerStoreId: rst.id, resourceType: 'reseller_store' });
    expect(byAction('source_store.created', source.id)).toMatchObject({ resellerStoreId: rst.id, resourceType: 'source_store' });
    expect(byAction('reseller_store.updated', rst.id).metadata).toMatchObject({ name: { to: 'Renamed shop' } });
    expect(byAction('source_store.updated', source.id).metadata).toMatchObject({ changed: ['name'] });
  });

  it('filters by reseller_store_id, action and resource_id, alone and combined', async ({ audit }) => {
    const byStore = await audit(`?reseller_store_id=${rst.id}`);
    expect(byStore.body.data.map((e: Entry) => e.id)).toEqual(entries.filter((e) => e.resellerStoreId === rst.id).map((e) => e.id));
    expect(byStore.body.data).toHaveLength(5);

    const created = await audit('?action=reseller_store.created');
    expect(created.body.data.map((e: Entry) => e.resourceId)).toEqual([other.id, rst.id]);

    const bySource = await audit(`?resource_id=${source.id}`);
    expect(bySource.body.data.map((e: Entry) => e.action)).toEqual(['source_store.deleted', 'source_store.updated', 'source_store.created']);

    const combined = await audit(`?reseller_store_id=${rst.id}&action=source_store.deleted&resource_id=${source.id}`);
    expect(combined.body.data).toHaveLength(1);
    expect(combined.body.data[0].action).toBe('source_store.deleted');

    expect((await audit('?action=sync_job.created')).body.data).toEqual([]);
    expect((await audit('?reseller_store_id=rst_missing')).body.data).toEqual([]);
  });

  it('pages with limit, starting_after and ending_before', async ({ audit }) => {
    const page1 = await audit('?limit=3');
    expect(page1.body.data.map((e: Entry) => e.id)).toEqual(entries.slice(0, 3).map((e) => e.id));
    expect(page1.body.has_more).toBe(true);
    const page2 = await audit(`?limit=3&starting_after=${entries[2]!.id}`);
    expect(page2.body.data.map((e: Entry) => e.id)).toEqual(entries.slice(3, 6).map((e) => e.id));
    expect(page2.body.has_more).toBe(true);
    const page3 = await audit(`?limit=3&starting_after=${entries[5]!.id}`);
    expect(page3.body.data.map((e: Entry) => e.id)).toEqual(entries.slice(6).map((e) => e.id));
    expect(page3.body.has_more).toBe(false);
    const back = await audit(`?limit=2&ending_before=${entries[3]!.id}`);
    expect(back.body.data.map((e: Entry) => e.id)).toEqual(entries.slice(1, 3).map((e) => e.id));
    expect(back.body.has_more).toBe(true);
    // Filters and cursors combine.
    const filtered = await audit(`?reseller_store_id=${rst.id}&limit=2&starting_after=${entries[3]!.id}`);
    expect(filtered.body.data.map((e: Entry) => e.id)).toEqual(entries.filter((e, i) => i > 3 && e.resellerStoreId === rst.id).slice(0, 2).map((e) => e.id));
    expect(filtered.body.has_more).toBe(true);
  });

  it('rejects bad query parameters with 400', async ({ audit }) => {
    expectError(await audit('?limit=0'), 400, 'validation_failed', 'limit');
    expectError(await audit(`?starting_after=${entries[0]!.id}&ending_before=${entries[2]!.id}`), 400, 'validation_failed');
    expectError(await audit(`?action=${'a'.repeat(65)}`), 400, 'validation_failed', 'action');
  });

  it('shows a user only the entries of their own stores', async ({ api, audit }) => {
    const stranger = await registerUser(api);
    const theirs = await createResellerStore(api, stranger.token);
    const strangers = await audit('?limit=100', stranger.token);
    expect(strangers.body.data.map((e: Entry) => e.resourceId)).toEqual([theirs.id]);
    expect((await audit(`?reseller_store_id=${rst.id}`, stranger.token)).body.data).toEqual([]);
    expect((await audit(`?resource_id=${source.id}`, stranger.token)).body.data).toEqual([]);
    expect((await audit('?limit=100')).body.data.map((e: Entry) => e.resourceId)).not.toContain(theirs.id);
  });

  it('requires authentication', async ({ api }) => {
    expectError(await api.get('/v1/audit_log'), 401, 'unauthorized');
  });
});

describe('the audit log is read-only', () => {
  it.for([
    ['POST', '/v1/audit_log', { action: 'reseller_store.created', resellerStoreId: 'rst_x' }],
    ['PUT', '/v1/audit_log', { action: 'x' }],
    ['PATCH', '/v1/audit_log', { action: 'x' }],
    ['DELETE', '/v1/audit_log', undefined],
    ['GET', '/v1/audit_log/aud_x', undefined],
    ['PATCH', '/v1/audit_log/aud_x', { action: 'x' }],
    ['DELETE', '/v1/audit_log/aud_x', undefined],
  ] as const)('%s %s answers 404 not_found', async ([method, path, body], { service, api, user }) => {
    const before = await queryRows(service.databaseUrl, 'select count(*)::int as n from audit_entries');
    const response = await api.request(method, path, { token: user.token, body });
    expectError(response, 404, 'not_found');
    expect(await queryRows(service.databaseUrl, 'select count(*)::int as n from audit_entries')).toEqual(before);
  });
});
