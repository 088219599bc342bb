/**
 * Every list endpoint pages with `starting_after` / `ending_before`, and the cursors it issues are
 * the ids of its own items (decisions.md): `job_` and 32 hex digits on the sync job list, and so on.
 * A cursor it never issued (junk, base64 or JSON someone made up, another list's id) is a 400
 * `validation_failed` naming the parameter, not a page: an empty page would read as "nothing more"
 * to a client syncing a list, and a page from the start (what `id < 'zzz'` gives) as new items. The
 * ids it issues still page, including one of an item gone since (a page boundary stays usable).
 */
import { describe, expect } from 'vitest';
import type { ApiClient } from './support/api.ts';
import { expectError } from './support/assertions.ts';
import { createApiKey } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';
import { addSupplier, createJob, lineOf, openShop, seedResellerOrder, type Shop } from './support/sync-jobs.ts';

const HEX32 = '0123456789abcdef'.repeat(2);

describe('paging cursors', () => {
  let shop: Shop;
  let lists: { path: string; prefix: string }[];
  it.beforeAll(async ({ api, sandbox, receiver }) => {
    shop = await openShop(api);
    const token = shop.user.token;
    const endpoint = await api.post('/v1/webhook_endpoints', { token, body: { url: receiver.url('/hooks'), enabledEvents: ['*'] } });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    const acme = await addSupplier(api, shop, { vendorTag: 'Acme' });
    await createApiKey(api, token);
    await createJob(api, token, acme.id, seedResellerOrder(sandbox, shop, [lineOf('Acme')]));
    lists = [
      { path: '/v1/sync_jobs', prefix: 'job' },
      { path: '/v1/reseller_stores', prefix: 'rst' },
      { path: `/v1/reseller_stores/${shop.reseller.id}/source_stores`, prefix: 'sst' },
      { path: `/v1/reseller_stores/${shop.reseller.id}/reconciliations`, prefix: 'rec' },
      { path: `/v1/reseller_stores/${shop.reseller.id}/divergences`, prefix: 'div' },
      { path: '/v1/api_keys', prefix: 'key' },
      { path: '/v1/audit_log', prefix: 'aud' },
      { path: '/v1/events', prefix: 'evt' },
      { path: '/v1/webhook_endpoints', prefix: 'we' },
      { path: `/v1/webhook_endpoints/${endpoint.body.id}/deliveries`, prefix: 'dlv' },
    ];
  });

  const get = (api: ApiClient, path: string, query: string) => api.get(`${path}${path.includes('?') ? '&' : '?'}${query}`, { token: shop.user.token });

  it('refuses a cursor the list did not issue with 400 validation_failed naming it', async ({ api }) => {
    for (const { path, prefix } of lists) {
      const other = prefix === 'job' ? 'rst' : 'job';
      const junk = [
        'junk',
        'zzzzzzzz',
        'eyJpZCI6ImpvYl8xIn0', // base64 of {"id":"job_1"}
        encodeURIComponent('{"id":1}'),
        `${prefix}_`,
        `${prefix}_${HEX32.slice(1)}`,
        `${prefix}_${HEX32}0`,
        `${prefix}_${HEX32.toUpperCase()}`,
        `${prefix}_${'z'.repeat(32)}`,
        `${other}_${HEX32}`,
      ];
      for (const cursor of junk) {
        for (const param of ['starting_after', 'ending_before']) {
          const response = await get(api, path, `${param}=${cursor}`);
          expect(response.status, `${path} ${param}=${cursor}: ${JSON.stringify(response.body)}`).toBe(400);
          expectError(response, 400, 'validation_failed', param);
        }
      }
    }
  });

  it('still pages with the ids it issues, and with one of an item it no longer has', async ({ api }) => {
    for (const { path, prefix } of lists) {
      const first = await get(api, path, 'limit=1');
      expect(first.status, `${path}: ${JSON.stringify(first.body)}`).toBe(200);
      const cursors = [`${prefix}_${HEX32}`, ...first.body.data.map((item: { id: string }) => item.id)];
      for (const cursor of cursors) {
        for (const param of ['starting_after', 'ending_before']) {
          const response = await get(api, path, `limit=2&${param}=${cursor}`);
          expect(response.status, `${path} ${param}=${cursor}: ${JSON.stringify(response.body)}`).toBe(200);
          expect(response.body.object).toBe('list');
        }
      }
    }
    // A page boundary walks on: the sync job list has one job, so after it there is nothing.
    const [job] = (await get(api, '/v1/sync_jobs', 'limit=1')).body.data;
    expect((await get(api, '/v1/sync_jobs', `starting_after=${job.id}`)).body).toMatchObject({ data: [], has_more: false });
  });
});
