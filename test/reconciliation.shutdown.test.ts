/**
 * A graceful shutdown (SIGTERM: `stop()` of the running service, what src/main.ts calls) in the middle
 * of a long reconciliation run. The queue's stop waited up to 30 s for the run, then closed the
 * database under it: the run stayed `running` under a lease (60 s) nobody renewed, no other process
 * could take it over until then, and with RECONCILE_INTERVAL_MS=0 the sweep then failed it as
 * abandoned, its listing thrown away. A stopping process now stops its runs after the page in
 * progress and hands them back (still `running`, with their counts, the store's watermark moved over
 * what was listed, and a new queue message): another worker goes on with the run at once.
 */
import { expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { finishedRun, idOf, jobsByOrder, openReseller, placeOrders, reconcile, watermarkOf, type Target } from './support/reconciliation.ts';

test.override('serviceEnv', { ROLE: 'api', RECONCILE_INTERVAL_MS: '0', DIVERGENCE_INTERVAL_MS: '0', RECONCILE_GRACE_MS: '0', SWEEP_INTERVAL_MS: '200' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

const ORDERS = 40;

it('a run in progress when its worker stops is handed back and finished by another worker at once', async ({ sandbox, target, startWorkerForTest }) => {
  const reseller = await openReseller(sandbox, target, 'platform_a');
  const lost = await placeOrders(sandbox, reseller, ORDERS, 'drop');
  // One order a page, each page a second: a listing of over 40 s, longer than the queue's stop waits.
  sandbox.setListPageSize(reseller.store.shopDomain, 1);
  sandbox.setFaults(reseller.store.shopDomain, { latencyMs: 1_000 });

  const first = await startWorkerForTest();
  const id = await reconcile(reseller);
  await waitFor(async () => {
    const [row] = await queryRows<{ orders_routed: number }>(target.databaseUrl, 'select orders_routed from reconciliation_runs where id = $1', [id]);
    return row && row.orders_routed >= 3 ? row : null;
  }, 30_000, 'the run under way');

  const stopping = performance.now();
  await first.stop();
  const stopMs = performance.now() - stopping;
  // The stop did not wait for the run to list its store to the end.
  expect(stopMs).toBeLessThan(10_000);
  // What the run did is kept: the store is reconciled up to the orders it listed.
  expect(await watermarkOf(reseller)).toBeDefined();
  const [handedBack] = await queryRows<{ status: string; orders_routed: number }>(target.databaseUrl, 'select status, orders_routed from reconciliation_runs where id = $1', [id]);
  expect(handedBack!.status).toBe('running');
  expect(handedBack!.orders_routed).toBeGreaterThanOrEqual(3);

  // Another worker goes on with the run at once, not after the stopped one's lease (60 s): taken
  // over at the lease's end, the rest of the listing (about 37 pages at platform_a's 2 calls/s,
  // some 19 s) would end over 70 s after the stop.
  sandbox.clearFaults(reseller.store.shopDomain);
  await startWorkerForTest();
  const run = await finishedRun(reseller, id, 45_000);
  expect(run).toMatchObject({ status: 'succeeded', ordersRouted: ORDERS, error: null });
  expect(run.ordersSeen).toBeGreaterThanOrEqual(ORDERS);
  const jobs = await jobsByOrder(reseller);
  expect(lost.map(idOf).filter((order) => jobs.get(order)?.length !== 1)).toEqual([]);
}, 150_000);

it('a run waiting for its store\'s turn behind a paced backlog when its worker stops is handed back at once, not after the wait', async ({ sandbox, target, startWorkerForTest }) => {
  const reseller = await openReseller(sandbox, target, 'platform_a');
  const lost = await placeOrders(sandbox, reseller, 6, 'drop');
  sandbox.setListPageSize(reseller.store.shopDomain, 1);
  sandbox.setFaults(reseller.store.shopDomain, { latencyMs: 300 });

  const first = await startWorkerForTest();
  const id = await reconcile(reseller);
  await waitFor(async () => {
    const [row] = await queryRows<{ orders_routed: number }>(target.databaseUrl, 'select orders_routed from reconciliation_runs where id = $1', [id]);
    return row && row.orders_routed >= 2 ? row : null;
  }, 30_000, 'the run under way');
  // A backlog on the store's allowance (a flash sale's placements): its next turn is 55 s away, within the 60 s a listing waits.
  const backlog = await queryRows<{ store_id: string; next_at: string }>(target.databaseUrl, "update store_pacing set next_at = clock_timestamp() + interval '55 seconds' returning store_id, next_at::text");
  // The run reserved its next turn behind it (the store's next_at moved on): it waits.
  await waitFor(async () => {
    const rows = await queryRows<{ n: number }>(target.databaseUrl, 'select count(*)::int as n from store_pacing p join unnest($1::text[], $2::timestamptz[]) b(store_id, next_at) using (store_id) where p.next_at > b.next_at', [backlog.map((row) => row.store_id), backlog.map((row) => row.next_at)]);
    return rows[0]!.n > 0 ? rows : null;
  }, 10_000, 'the run waiting for its turn');

  const stopping = performance.now();
  await first.stop();
  const stopMs = performance.now() - stopping;
  // Before: the stop waited for the turn (the queue's 30 s), then closed the database under the run.
  expect(stopMs).toBeLessThan(5_000);
  const [handedBack] = await queryRows<{ status: string; handed_back: boolean; error: string | null }>(target.databaseUrl, 'select status, handed_back, error from reconciliation_runs where id = $1', [id]);
  expect(handedBack).toMatchObject({ status: 'running', handed_back: true, error: null });

  // The backlog drains; another worker goes on with the run at once.
  await queryRows(target.databaseUrl, 'update store_pacing set next_at = clock_timestamp()');
  sandbox.clearFaults(reseller.store.shopDomain);
  await startWorkerForTest();
  const run = await finishedRun(reseller, id, 20_000);
  expect(run).toMatchObject({ status: 'succeeded', ordersRouted: 6, error: null });
  const jobs = await jobsByOrder(reseller);
  expect(lost.map(idOf).filter((order) => jobs.get(order)?.length !== 1)).toEqual([]);
}, 120_000);
