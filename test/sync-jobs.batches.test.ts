/**
 * Workers take queue messages in batches. A row whose stored state cannot be read, or an answer
 * whose text cannot be stored as it is, must cost only its own message: the other jobs of its batch
 * are placed and completed as usual. The jobs are made through an API process first and the worker
 * process starts afterwards, so its first fetch takes them all as one batch.
 */
import { expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { registerUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';
import { addSupplier, createJob, jobRow, lineOf, logLines, messagesOfJob, openShop, orderPosts, queueMessage, seedResellerOrder, settled } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

it.override('serviceEnv', { ROLE: 'api' });

it('completes the other jobs of a batch when one row in it cannot be read', async ({ service, api, sandbox, startWorkerForTest }) => {
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

  const worker = await startWorkerForTest({ WORKER_CONCURRENCY: '8' });
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

it('records every outcome of a batch when one supplier answers with text PostgreSQL cannot store as it is', async ({ service, api, sandbox, startWorkerForTest }) => {
  const user = await registerUser(api);
  const shop = await openShop(api, { platform: 'platform_b' }, user);
  const careless = await addSupplier(api, shop, { vendorTag: 'Careless' });
  const careful = await addSupplier(api, shop, { vendorTag: 'Careful' });
  sandbox.setFaults(careless.shopDomain, { nulErrorNext: 1 });
  const bad = await createJob(api, user.token, careless.id, seedResellerOrder(sandbox, shop, [lineOf('Careless')]));
  const healthy = [];
  for (let i = 0; i < 5; i++) healthy.push(await createJob(api, user.token, careful.id, seedResellerOrder(sandbox, shop, [lineOf('Careful')])));

  const worker = await startWorkerForTest({ WORKER_CONCURRENCY: '8' });
  for (const job of healthy) expect(await settled(api, user.token, job.id)).toMatchObject({ status: 'completed', attempts: 1 });
  expect(orderPosts(sandbox, careful.shopDomain)).toHaveLength(healthy.length);
  // The careless supplier's 422 was recorded as a failed attempt (without its NUL) and retried once
  // under the policy; its message was settled with the rest of the batch, not redelivered.
  const done = await settled(api, user.token, bad.id);
  expect(done).toMatchObject({ status: 'completed', attempts: 2 });
  expect(done.failedAt).not.toBeNull();
  expect(orderPosts(sandbox, careless.shopDomain).map((post) => post.status)).toEqual([422, 201]);
  const messages = await Promise.all([bad, ...healthy].map(async (job) => queueMessage(service.databaseUrl, (await messagesOfJob(service.databaseUrl, job.id))[0]!.id)));
  for (const message of messages) expect(message).toMatchObject({ state: 'completed', retry_count: 0 });
  const started = logLines(worker.logs, 'attempt started').slice(0, 6).map((line) => line.job_id);
  expect(started.sort()).toEqual([bad, ...healthy].map((job) => job.id).sort());
});
