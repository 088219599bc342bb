/**
 * A graceful shutdown (SIGTERM: `stop()` of the running service, what src/main.ts calls) in the middle
 * of a long divergence-watch pass. The queue's stop waited up to 30 s for the pass, then closed the
 * database under it: the pass stayed `running` under a lease (60 s) nobody renewed, and no other
 * process could take it over (nor could the reseller ask for a check: 409) until then. A stopping
 * process now stops its passes after the page in progress and hands them back (still `running`, the
 * stores' watermarks moved over the pages compared, a new queue message): another worker goes on at once.
 */
import { expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { finishedPass, openTenant, requestCheck, watermarkOf, type Target } from './support/watch.ts';

test.override('serviceEnv', { ROLE: 'api', RECONCILE_INTERVAL_MS: '0', DIVERGENCE_INTERVAL_MS: '0', SWEEP_INTERVAL_MS: '200' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

const ORDERS = 40;

it('a pass in progress when its worker stops is handed back and finished by another worker at once', async ({ sandbox, target, startWorkerForTest }) => {
  const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
  // Orders changed on the storefront since the store was added (the watch lists them page by page).
  for (let i = 0; i < ORDERS; i++) {
    sandbox.seedOrder(
      tenant.reseller.shopDomain,
      'platform_a',
      sandbox.buildOrderPayload('platform_a', { id: 7_300_000 + i, lines: [{ sku: 'SHT-1', title: 'Shutdown', vendor: 'Nobody', quantity: 1, price: '5.00' }], email: 'ada@example.com' }),
    );
  }
  // One order a page, each page a second: a listing of over 40 s, longer than the queue's stop waits.
  sandbox.setListPageSize(tenant.reseller.shopDomain, 1);
  sandbox.setFaults(tenant.reseller.shopDomain, { latencyMs: 1_000 });
  const listCalls = () => sandbox.requestsFor(tenant.reseller.shopDomain).filter((request) => request.method === 'GET').length;

  const first = await startWorkerForTest();
  const id = await requestCheck(tenant);
  await waitFor(async () => (listCalls() >= 4 ? true : null), 30_000, 'the pass under way');

  const stopping = performance.now();
  await first.stop();
  const stopMs = performance.now() - stopping;
  // The stop did not wait for the pass to list the store to the end.
  expect(stopMs).toBeLessThan(10_000);
  // What the pass compared is kept: the storefront's watermark moved over it.
  expect(await watermarkOf(target, tenant.reseller.id)).not.toBeNull();
  const [handedBack] = await queryRows<{ status: string }>(target.databaseUrl, 'select status from watch_passes where id = $1', [id]);
  expect(handedBack!.status).toBe('running');

  // Another worker goes on with the pass at once, not after the stopped one's lease (60 s).
  sandbox.clearFaults(tenant.reseller.shopDomain);
  await startWorkerForTest();
  const pass = await finishedPass(tenant, id, 20_000);
  expect(pass).toMatchObject({ status: 'succeeded', error: null });
  expect(pass.orders_seen).toBeGreaterThanOrEqual(ORDERS);
}, 150_000);
