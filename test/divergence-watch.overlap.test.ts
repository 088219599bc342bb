/**
 * A burst of changes inside the overlap a pass relists (more pages than a pass lists past the
 * watermark) does not keep the watch from getting past the watermark: pages of the overlap alone
 * do not count against the pass's page budget.
 */
import { expect } from 'vitest';
import { buildOrderPayload } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { check, openTenant, watermarkOf, type Target } from './support/watch.ts';

// One call a page at the sandbox's speed: the default per-store pacing (a few calls a second) would make 200 pages take a minute.
test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', PLATFORM_PACING: '*=2000:2000' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

/** More than a pass's budget of pages past the watermark (MAX_PAGES_PER_STORE, src/divergence-watch/runner.ts), one order a page. */
const BURST = 205;

it('a pass gets past the watermark when the overlap it relists holds more pages than its budget', async ({ sandbox, target }) => {
  const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
  const supplier = tenant.suppliers[0]!;
  const watermark = new Date(Date.now() - 60_000);
  await queryRows(target.databaseUrl, "update source_stores set created_at = now() - interval '1 hour' where id = $1", [supplier.id]);
  await queryRows(target.databaseUrl, 'insert into watch_watermarks (store_id, watermark, updated_at) values ($1, $2, now())', [supplier.id, watermark]);
  // A bulk change at the supplier, just before the watermark: all of it inside the overlap.
  for (let n = 0; n < BURST; n++) {
    const order = buildOrderPayload('custom', { id: `bulk-${n}`, lines: [{ sku: 'B-1', title: 'Bulk', vendor: 'Bulk', quantity: 1, price: '1.00' }] });
    sandbox.seedOrder(supplier.shopDomain, 'custom', { ...order, updatedAt: new Date(watermark.getTime() - 120_000 + n * 100).toISOString() });
  }
  const later = buildOrderPayload('custom', { id: 'after-the-burst', lines: [{ sku: 'B-2', title: 'Later', vendor: 'Bulk', quantity: 1, price: '1.00' }] });
  const laterAt = new Date(watermark.getTime() + 10_000);
  sandbox.seedOrder(supplier.shopDomain, 'custom', { ...later, updatedAt: laterAt.toISOString() });
  sandbox.setListPageSize(supplier.shopDomain, 1);

  expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
  expect(await watermarkOf(target, supplier.id)).toEqual(laterAt);
});
