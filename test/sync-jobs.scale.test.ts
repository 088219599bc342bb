/**
 * Two worker processes on one database (plus one API process) share 500 jobs: each job is done
 * exactly once and both workers do some of them. The jobs go through POST /v1/sync_jobs, so the
 * workers read every order from the reseller platform; they are spread over 20 shops so that no
 * store's request pacing (a per-process token bucket) slows the run down.
 */
import { expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { addSupplier, lineOf, logLines, openShop, seedResellerOrder, type Shop, type Supplier } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

const SHOPS = 20;
const ORDERS_PER_SHOP = 25;
const JOBS = SHOPS * ORDERS_PER_SHOP;

test.override('serviceEnv', { ROLE: 'api' });
/** The two worker processes on the API's database. */
const it = test.extend('workers', { scope: 'file' }, async ({ startWorker }) => [
  await startWorker({ WORKER_CONCURRENCY: '16' }),
  await startWorker({ WORKER_CONCURRENCY: '16' }),
]);

/** Runs `task` over `items`, `width` at a time. */
async function inParallel<T>(items: T[], width: number, task: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(Array.from({ length: width }, async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await task(item);
  }));
}

it(`two workers process ${JOBS} jobs, each exactly once`, async ({ service, api, sandbox, workers }) => {
  const user = await registerUser(api);
  const pairs: { shop: Shop; supplier: Supplier }[] = [];
  for (let i = 0; i < SHOPS; i++) {
    const shop = await openShop(api, { platform: i % 2 === 0 ? 'platform_b' : 'custom' }, user);
    pairs.push({ shop, supplier: await addSupplier(api, shop, { vendorTag: 'Acme' }) });
  }
  const requests = pairs.flatMap(({ shop, supplier }) =>
    Array.from({ length: ORDERS_PER_SHOP }, () => ({ supplier, orderId: seedResellerOrder(sandbox, shop, [lineOf('Acme'), lineOf('Other')]) })),
  );

  const started = Date.now();
  const jobIds: string[] = [];
  await inParallel(requests, 25, async ({ supplier, orderId }) => {
    const response = await api.post('/v1/sync_jobs', { token: user.token, body: { source_store_id: supplier.id, external_order_id: orderId } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    jobIds.push(response.body.id);
  });
  expect(new Set(jobIds).size).toBe(JOBS);

  // Creating and settling all of them takes about 20 s with the machine to itself (every process
  // shares this one); the limit leaves room for a busy machine.
  await waitFor(async () => {
    const [row] = await queryRows<{ settled: string }>(service.databaseUrl, `select count(*) as settled from sync_jobs where status in ('completed', 'dead')`);
    return Number(row!.settled) === JOBS;
  }, 90_000, `all ${JOBS} jobs to settle`);
  const elapsedMs = Date.now() - started;

  const byOutcome = await queryRows<{ status: string; attempts: number; count: string }>(
    service.databaseUrl,
    'select status, attempts, count(*) from sync_jobs group by status, attempts',
  );
  expect(byOutcome.map((row) => ({ ...row, count: Number(row.count) }))).toEqual([{ status: 'completed', attempts: 1, count: JOBS }]);

  // Exactly one order per job on the sandbox, each under its own job's Idempotency-Key.
  const orders = pairs.flatMap(({ supplier }) => sandbox.ordersFor(supplier.shopDomain));
  expect(orders).toHaveLength(JOBS);
  const keys = new Set(orders.map((order) => order.idempotencyKey));
  expect(keys.size).toBe(JOBS);
  expect([...keys].sort()).toEqual(jobIds.map((id) => `sync-job:${id}`).sort());
  const posts = pairs.flatMap(({ supplier }) => sandbox.requestsFor(supplier.shopDomain).filter((request) => request.method === 'POST'));
  expect(posts).toHaveLength(JOBS);
  const sourceOrderIds = await queryRows<{ source_order_id: string }>(service.databaseUrl, 'select source_order_id from sync_jobs');
  expect(new Set(sourceOrderIds.map((row) => row.source_order_id)).size).toBe(JOBS);

  // Each attempt started exactly once across the two processes, and both took part.
  const perWorker = workers.map((worker) => logLines(worker.logs, 'attempt started').map((line) => line.job_id as string));
  expect(perWorker[0]!.length + perWorker[1]!.length).toBe(JOBS);
  expect(new Set(perWorker.flat()).size).toBe(JOBS);
  for (const started of perWorker) expect(started.length).toBeGreaterThan(0);
  console.info(`${JOBS} jobs settled in ${elapsedMs} ms; attempts per worker: ${perWorker.map((ids) => ids.length).join(' / ')}`);
}, 120_000);
