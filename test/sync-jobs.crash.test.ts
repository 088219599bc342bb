/**
 * A worker that dies after the platform accepted the order, before the job was recorded, must not
 * cause a second order: the queue redelivers the same message, the next worker takes the job
 * again and the platform answers the same Idempotency-Key (`sync-job:<jobId>`) with the first order.
 *
 * How the death is simulated: the API runs alone (ROLE api) and the first worker (ROLE worker, its
 * own ORM and pg-boss, a separate in-process service) reaches the database only through a TCP relay
 * the test controls (DbLink). Once that worker has read everything it needs and its order POST is
 * held at the platform (the sandbox holds it until the test releases it), the test freezes the
 * relay and releases the POST: from then on not one byte of
 * that worker reaches the database or comes back, exactly as if its process had been killed. So the
 * platform accepts the order, the worker gets the answer, and its attempt to record it never
 * lands; its pg-boss heartbeat on the message stops too, leaving the row `processing` and the
 * message `active`, as a crash would. pg-boss's supervisor fails a message whose heartbeat lapsed
 * (heartbeatSeconds 10) and retries the same message id; the test waits for the lapse in real time
 * and then runs that supervisor pass itself (`boss.supervise`) instead of waiting up to a minute for
 * its timer. A second worker process, started afterwards, picks the redelivered message up.
 */
import { expect } from 'vitest';
import { syncJobKind } from '../src/sync-jobs/kind.ts';
import { WORKER_LOST } from '../src/attempts/entity.ts';
import { DbLink } from './support/db-link.ts';
import { test } from './support/fixtures.ts';
import {
  addSupplier,
  createJob,
  jobRow,
  lineOf,
  logLines,
  openShop,
  orderPosts,
  queueMessage,
  seedResellerOrder,
  settled,
} from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

test.override('serviceEnv', { ROLE: 'api' });

const it = test
  /** The relay between the doomed worker and the database. */
  .extend('link', { scope: 'file' }, async ({ service }, { onCleanup }) => {
    const link = await DbLink.open(service.databaseUrl);
    onCleanup(() => link.close());
    return link;
  })
  /** The first worker, which reaches the database only through `link`. */
  .extend('doomed', { scope: 'file' }, async ({ link, startWorker }, { onCleanup }) => {
    const doomed = await startWorker({ DATABASE_URL: link.databaseUrl });
    // Let the frozen worker's buffered traffic through so it can shut down; the job is settled by then.
    onCleanup(async () => {
      link.thaw();
      await doomed.stop();
    });
    return doomed;
  });

it('a worker dying after the platform accepted the order: completed, with exactly one order', async ({ service, api, sandbox, startWorker, link, doomed }) => {
  const shop = await openShop(api);
  const supplier = await addSupplier(api, shop, { vendorTag: 'Acme' });
  // The platform holds the order POST until the test releases it.
  sandbox.setFaults(supplier.shopDomain, { holdRequestsNext: 1 });
  const orderId = seedResellerOrder(sandbox, shop, [lineOf('Acme')]);
  const job = await createJob(api, shop.user.token, supplier.id, orderId);
  const messageId = (await jobRow(service.databaseUrl, job.id)).queue_message_id!;

  // The doomed worker took the job, read the reseller order (its last database read before the
  // platform call) and its order POST is at the platform, held there: the link is frozen now.
  await waitFor(async () => sandbox.heldRequestCount(supplier.shopDomain) === 1, 10_000, 'the first worker to be calling the platform');
  expect(await jobRow(service.databaseUrl, job.id)).toMatchObject({ status: 'processing' });
  link.freeze();
  expect(sandbox.releaseRequests(supplier.shopDomain)).toBe(1);

  // The platform accepts the order and answers; the worker can no longer record it.
  await waitFor(async () => orderPosts(sandbox, supplier.shopDomain).length === 1, 10_000, 'the platform to answer');
  expect(orderPosts(sandbox, supplier.shopDomain)[0]!.status).toBe(201);
  expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
  expect(await jobRow(service.databaseUrl, job.id)).toMatchObject({ status: 'processing', attempts: 1, queue_message_id: messageId });
  expect(await queueMessage(service.databaseUrl, messageId)).toMatchObject({ state: 'active' });
  expect(logLines(doomed.logs, 'attempt started')).toHaveLength(1);
  expect(logLines(doomed.logs, 'attempt completed')).toHaveLength(0);

  // The dead worker's heartbeat on the message lapses.
  await waitFor(async () => (await queueMessage(service.databaseUrl, messageId))?.heartbeat_stale === true, 20_000, 'the heartbeat to lapse');
  const survivor = await startWorker();
  // pg-boss's supervisor pass, now rather than at its next tick: fails the message for its heartbeat.
  await survivor.ctx.queue.boss.supervise(syncJobKind.queue.name);
  expect(await queueMessage(service.databaseUrl, messageId)).toMatchObject({ state: expect.stringMatching(/^(retry|active|completed)$/) });

  // The same message, redelivered, lets the surviving worker take the job again.
  const done = await settled(api, shop.user.token, job.id, 15_000);
  expect(done).toMatchObject({ status: 'completed', attempts: 2, errorMessage: null });
  const orders = sandbox.ordersFor(supplier.shopDomain);
  expect(orders).toHaveLength(1);
  expect(done.sourceOrderId).toBe(String(orders[0]!.id));
  expect(orderPosts(sandbox, supplier.shopDomain).map((post) => [post.status, post.idempotentReplay])).toEqual([
    [201, false],
    [201, true],
  ]);
  expect(logLines(survivor.logs, 'attempt started')).toEqual([expect.objectContaining({ job_id: job.id, message_id: messageId, attempt: 2 })]);
  expect(await queueMessage(service.databaseUrl, messageId)).toMatchObject({ state: 'completed', retry_count: 1 });

  // The timeline keeps the lost attempt, closed as failed without a platform status, and the one that recovered the job.
  const timeline = (await api.get(`/v1/sync_jobs/${job.id}/attempts`, { token: shop.user.token })).body.data;
  expect(timeline).toEqual([
    expect.objectContaining({ attempt: 1, trigger: 'initial', outcome: 'failed', platformStatus: null, errorMessage: WORKER_LOST, sourceOrderId: null }),
    expect.objectContaining({ attempt: 2, trigger: 'recovered', outcome: 'succeeded', platformStatus: 201, errorMessage: null, sourceOrderId: done.sourceOrderId }),
  ]);

  // Should the "dead" worker come back (the partition heals), its late answer changes nothing.
  link.thaw();
  await doomed.stop();
  expect(await jobRow(service.databaseUrl, job.id)).toMatchObject({ status: 'completed', attempts: 2 });
  expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
}, 45_000);
