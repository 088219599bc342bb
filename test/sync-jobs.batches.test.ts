/**
 * Workers take queue messages in batches. A row whose stored state cannot be read must cost only
 * its own message: the other jobs of its batch are placed and completed as usual. The jobs are made
 * through an API process first and the worker process starts afterwards, so its first fetch takes
 * them all as one batch.
 */
import { expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { registerUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';
import { addSupplier, createJob, jobRow, lineOf, logLines, openShop, orderPosts, seedResellerOrder, settled } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

it.override('serviceEnv', { ROLE: 'api' });

it('completes the other jobs of a batch when one row in it cannot be read', async ({ service, api, sandbox, startWorker }) => {
  const user = await registerUser(api);
  const shop = await openShop(api, { platform: 'platform_b' }, user);
  const supplier = await addSupplier(api, shop, { vendorTag: 'Acme' });
  const jobs = [];
  for (let i = 0; i < 6; i++) {
    const orderId = seedResellerOrder(sandbox, shop, [lineOf('Acme')]);
    jobs.push(await createJob(api, user.token, supplier.id, orderId));
  }
  const [broken, ...healthy] = jobs;
  // Lifecycle columns the machine cannot read (the not-null constraint would refuse them: dropped in this test's own database).
  await queryRows(service.databaseUrl, 'alter table sync_jobs alter column retries_left drop not null');
  await queryRows(service.databaseUrl, 'update sync_jobs set retries_left = null where id = $1', [broken.id]);

  const worker = await startWorker({ WORKER_CONCURRENCY: '8' });
  for (const job of healthy) expect((await settled(api, user.token, job.id)).status).toBe('completed');

  expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(healthy.length);
  await waitFor(async () => logLines(worker.logs, 'row state unreadable; message ignored').length > 0 || null, 10_000, 'the unreadable row to be logged');
  expect(logLines(worker.logs, 'row state unreadable; message ignored')[0]).toMatchObject({ job_id: broken.id, level: 50 });
  const row = await jobRow(service.databaseUrl, broken.id);
  expect(row.status).toBe('pending');
  expect(row.attempts).toBe(0);
  // All six were in the worker's first batch, started together.
  const started = logLines(worker.logs, 'attempt started').map((line) => line.job_id);
  expect(started.sort()).toEqual(healthy.map((job) => job.id).sort());
});
