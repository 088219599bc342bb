/**
 * No job stranded (operations.md; issue 13, item 2): every pending, processing or failed sync job
 * and fulfillment has a live queue message that will move it. Each case leaves a row the way a
 * crash, a lost message or an exhausted queue leaves it (the rows are made through an API process,
 * with no worker yet, then put in that state), starts a worker process, and checks the sweep (or the
 * worker, for a redelivered message) finishes it as the retry policy says: completed, or dead with
 * audit `sync_job.dead` and its `metadata.reason`. Before the sweep such rows stayed as they were.
 */
import pg from 'pg';
import { describe, expect } from 'vitest';
import { WORKER_LOST_ERROR } from '../machines/attempt.machine.ts';
import { createSweeper } from '../src/workers/kinds.ts';
import { buildFulfillmentPayload, sendWebhook } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { addSupplier, auditOf, createJob, getJob, jobRow, lineOf, logLines, openShop, orderPosts, seedResellerOrder, settled, type Shop, type Supplier } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH, queueMessageCount, uniqueSuffix } from './support/webhooks.ts';

test.override('serviceEnv', { ROLE: 'api' });

const it = test
  /**
   * Starts a worker process on the API's database that sweeps every 300 ms (rows untouched for
   * 1.3 s count as stranded); it stops when the test ends.
   */
  .extend('startSweepingWorker', ({ startWorkerForTest }) => () => startWorkerForTest({ SWEEP_INTERVAL_MS: '300', PLATFORM_TIMEOUT_MS: '1000' }))
  .extend('sql', { scope: 'file' }, ({ service }) => <T = Record<string, unknown>>(text: string, params: unknown[] = []) => queryRows<T>(service.databaseUrl, text, params))
  /** A job made through the API process (no worker runs yet, so it waits, pending, with its message). */
  .extend('pendingJob', { scope: 'file' }, ({ service, api, sandbox }) => async (): Promise<{ shop: Shop; supplier: Supplier; job: { id: string }; messageId: string }> => {
    const shop = await openShop(api);
    const supplier = await addSupplier(api, shop, { vendorTag: 'Acme' });
    const job = await createJob(api, shop.user.token, supplier.id, seedResellerOrder(sandbox, shop, [lineOf('Acme')]));
    return { shop, supplier, job, messageId: (await jobRow(service.databaseUrl, job.id)).queue_message_id! };
  })
  /** Puts the job in a state as a crash would leave it, last touched an hour ago, and its message in `messageState` (null: gone). */
  .extend('strand', { scope: 'file' }, ({ sql }) =>
    async (jobId: string, messageId: string, row: { status: string; attempts: number; retriesLeft: number }, messageState: 'completed' | 'failed' | 'retry' | null) => {
      await sql(`update sync_jobs set status = $2, attempts = $3, retries_left = $4, updated_at = now() - interval '1 hour' where id = $1`, [
        jobId,
        row.status,
        row.attempts,
        row.retriesLeft,
      ]);
      if (messageState === null) await sql('delete from pgboss.job where id = $1', [messageId]);
      else await sql(`update pgboss.job set state = $2, start_after = now() where id = $1`, [messageId, messageState]);
    })
  .extend('deadEntry', { scope: 'file' }, ({ api }) => async (token: string, id: string) =>
    (await auditOf(api, token, id)).find((entry) => entry.action === 'sync_job.dead'));

describe('the sweep', () => {
  it('queues a pending job whose message was lost again: completed, attempt 1, one order', async ({ api, sandbox, pendingJob, strand, startSweepingWorker }) => {
    const { shop, supplier, job, messageId } = await pendingJob();
    await strand(job.id, messageId, { status: 'pending', attempts: 0, retriesLeft: 3 }, null);
    const process = await startSweepingWorker();
    expect(await settled(api, shop.user.token, job.id)).toMatchObject({ status: 'completed', attempts: 1, errorMessage: null });
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
    expect(logLines(process.logs, 'stranded: queued again')).toEqual([expect.objectContaining({ job_id: job.id, action: 'requeued' })]);
  });

  it('counts an attempt whose worker is gone (processing, no live message) as failed, and retries it', async ({ service, api, sandbox, pendingJob, strand, startSweepingWorker }) => {
    const { shop, supplier, job, messageId } = await pendingJob();
    await strand(job.id, messageId, { status: 'processing', attempts: 1, retriesLeft: 3 }, 'completed');
    await startSweepingWorker();
    const done = await settled(api, shop.user.token, job.id);
    expect(done).toMatchObject({ status: 'completed', attempts: 2, errorMessage: null, nextRetryAt: null });
    expect(done.failedAt).not.toBeNull();
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
    // The sweep's failure scheduled the retry: its sync_job.failed event says when, exactly as the message was queued.
    const failed = await api.get(`/v1/events?type=sync_job.failed&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    const { nextRetryAt } = failed.body.data[0].data.object;
    const starts = await queryRows<{ start_after: Date }>(
      service.databaseUrl,
      `select start_after from pgboss.job where name = 'sync-job.process' and data->>'syncJobId' = $1`,
      [job.id],
    );
    expect(starts.map((message) => new Date(message.start_after).toISOString())).toContain(nextRetryAt);
  });

  it('moves a job lost on its last retry to dead (worker_lost); a manual retry then completes it', async ({ service, api, sandbox, pendingJob, strand, deadEntry, startSweepingWorker }) => {
    const { shop, supplier, job, messageId } = await pendingJob();
    await strand(job.id, messageId, { status: 'processing', attempts: 4, retriesLeft: 0 }, 'completed');
    await startSweepingWorker();
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 4, errorMessage: WORKER_LOST_ERROR });
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(0);
    expect((await deadEntry(shop.user.token, job.id))?.metadata).toMatchObject({ reason: 'worker_lost', attempts: 4 });
    expect((await jobRow(service.databaseUrl, job.id)).queue_message_id).toBeNull();
    expect((await api.get(`/v1/sync_jobs?status=dead&source_store_id=${supplier.id}`, { token: shop.user.token })).body.data).toHaveLength(1);

    const retried = await api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(await settled(api, shop.user.token, job.id)).toMatchObject({ status: 'completed', attempts: 5 });
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
  });

  it('moves a job whose message the queue gave up on to dead (delivery_exhausted)', async ({ api, sandbox, pendingJob, strand, deadEntry, startSweepingWorker }) => {
    const { shop, supplier, job, messageId } = await pendingJob();
    await strand(job.id, messageId, { status: 'pending', attempts: 0, retriesLeft: 3 }, 'failed');
    await startSweepingWorker();
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 0 });
    expect(dead.errorMessage).toContain('delivered 4 times');
    expect((await deadEntry(shop.user.token, job.id))?.metadata).toMatchObject({ reason: 'delivery_exhausted', attempts: 0 });
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(0);
    // No attempt failed: its death alone.
    const events = await api.get(`/v1/events?reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(events.body.data.map((event: any) => event.type).filter((type: string) => type !== 'sync_job.created')).toEqual(['sync_job.dead']);
  });

  it('queues a fulfillment whose message was lost again, and it reaches the customer once', async ({ service, api, sandbox, sql, startSweepingWorker }) => {
    const shop = await openShop(api, { platform: 'custom' });
    const supplierSecret = `whsec_${uniqueSuffix()}`;
    const supplier = await addSupplier(api, shop, { vendorTag: 'Acme', webhookSecret: supplierSecret });
    const job = await createJob(api, shop.user.token, supplier.id, seedResellerOrder(sandbox, shop, [lineOf('Acme')]));
    const placing = await startSweepingWorker();
    const placed = await settled(api, shop.user.token, job.id);
    await placing.stop();

    const delivered = await sendWebhook({
      targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
      shopDomain: supplier.shopDomain,
      secret: supplierSecret,
      topic: 'fulfillments/create',
      payload: buildFulfillmentPayload('custom', { orderId: placed.sourceOrderId, trackingNumbers: ['SWEPT-1'] }),
    });
    expect(delivered.status).toBe(200);
    const [fulfillment] = await sql<{ id: string; queue_message_id: string }>('select id, queue_message_id from fulfillments where sync_job_id = $1', [job.id]);
    await sql('delete from pgboss.job where id = $1', [fulfillment!.queue_message_id]);
    await sql(`update fulfillments set updated_at = now() - interval '1 hour' where id = $1`, [fulfillment!.id]);

    await startSweepingWorker();
    await waitFor(async () => (await getJob(api, shop.user.token, job.id)).fulfillments[0]?.status === 'completed', 15_000, 'the fulfillment');
    expect(sandbox.fulfillmentsFor(shop.reseller.shopDomain)).toHaveLength(1);
    expect(await queueMessageCount(service.databaseUrl, 'fulfillment.propagate', [fulfillment!.id])).toBe(1);
  });

  it('leaves a failed job waiting for its retry to that retry, and queues a failed one whose retry is due at once', async ({ service, api, sandbox, pendingJob, strand, sql, startSweepingWorker }) => {
    // Both failed an hour ago and both messages are gone; one's retry is due in an hour, the other's was due a minute ago.
    const waiting = await pendingJob();
    const due = await pendingJob();
    for (const [{ job, messageId }, retry] of [
      [waiting, "now() + interval '1 hour'"],
      [due, "now() - interval '1 minute'"],
    ] as const) {
      await strand(job.id, messageId, { status: 'failed', attempts: 1, retriesLeft: 3 }, null);
      await sql(`update sync_jobs set failed_at = updated_at, error_message = 'supplier unavailable', next_retry_at = ${retry} where id = $1`, [job.id]);
    }
    const [before] = await sql<{ next_retry_at: Date }>('select next_retry_at from sync_jobs where id = $1', [waiting.job.id]);
    const process = await startSweepingWorker();
    // The stranded one: queued again and retried.
    expect(await settled(api, due.shop.user.token, due.job.id)).toMatchObject({ status: 'completed', attempts: 2 });
    expect(sandbox.ordersFor(due.supplier.shopDomain)).toHaveLength(1);
    // The waiting one was read by the same passes before the change (same age): it is still waiting, for the same time.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const [after] = await sql<{ status: string; next_retry_at: Date; queue_message_id: string }>(
      'select status, next_retry_at, queue_message_id from sync_jobs where id = $1',
      [waiting.job.id],
    );
    expect(after).toMatchObject({ status: 'failed', next_retry_at: before!.next_retry_at, queue_message_id: waiting.messageId });
    expect(await queueMessageCount(service.databaseUrl, 'sync-job.process', [waiting.job.id])).toBe(0);
    expect(orderPosts(sandbox, waiting.supplier.shopDomain)).toHaveLength(0);
    expect(logLines(process.logs, 'stranded: queued again')).toEqual([expect.objectContaining({ job_id: due.job.id, action: 'requeued' })]);
  });

  it('runs in one process at a time', async ({ service, api, pendingJob, strand, startSweepingWorker }) => {
    const { shop, job, messageId } = await pendingJob();
    await strand(job.id, messageId, { status: 'pending', attempts: 0, retriesLeft: 3 }, null);
    // Another process holds the sweep's turn: this one's passes, scheduled or not, do nothing.
    const other = new pg.Client({ connectionString: service.databaseUrl });
    await other.connect();
    try {
      await other.query('begin');
      await other.query(`select pg_advisory_xact_lock(hashtext('attempts.sweep'))`);
      const process = await startSweepingWorker();
      expect(await createSweeper(process.ctx).sweepOnce()).toBeNull();
      expect((await jobRow(service.databaseUrl, job.id)).status).toBe('pending');
      await other.query('rollback');
    } finally {
      await other.end();
    }
    // Its turn now: the job is queued again and completes.
    expect(await settled(api, shop.user.token, job.id)).toMatchObject({ status: 'completed', attempts: 1 });
  });
});

describe('redelivered messages', () => {
  it('counts the attempt in progress of a job whose message the queue gave up on as failed: sync_job.failed, then sync_job.dead', async ({ api, sandbox, pendingJob, strand, deadEntry, startSweepingWorker }) => {
    const { shop, supplier, job, messageId } = await pendingJob();
    await strand(job.id, messageId, { status: 'processing', attempts: 2, retriesLeft: 2 }, 'failed');
    await startSweepingWorker();
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 2 });
    expect(dead.failedAt).toBe(dead.deadAt);
    expect((await deadEntry(shop.user.token, job.id))?.metadata).toMatchObject({ reason: 'delivery_exhausted', attempts: 2 });
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(0);
    const events = await api.get(`/v1/events?reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(events.body.data.map((event: any) => event.type).reverse().filter((type: string) => type !== 'sync_job.created')).toEqual(['sync_job.failed', 'sync_job.dead']);
  });

  it('never attempt a job more often than the policy allows: a redelivery on the last retry is the death of the lost attempt, not a fifth call', async ({ api, sandbox, pendingJob, strand, deadEntry, startSweepingWorker }) => {
    const { shop, supplier, job, messageId } = await pendingJob();
    // The worker that took attempt 4 died; pg-boss redelivers its message.
    await strand(job.id, messageId, { status: 'processing', attempts: 4, retriesLeft: 0 }, 'retry');
    await startSweepingWorker();
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 4, errorMessage: WORKER_LOST_ERROR });
    expect((await deadEntry(shop.user.token, job.id))?.metadata).toMatchObject({ reason: 'worker_lost' });
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(0);
    // Its event with it, as when the sweep finds the same death.
    const events = await api.get(`/v1/events?type=sync_job.dead&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(events.body.data.map((event: any) => event.data.object)).toMatchObject([{ id: job.id, status: 'dead', errorMessage: WORKER_LOST_ERROR }]);
    // The lost attempt was a failed attempt (events.md: sync_job.failed on every one), the last one.
    const all = await api.get(`/v1/events?reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(all.body.data.map((event: any) => event.type).reverse().filter((type: string) => type !== 'sync_job.created')).toEqual(['sync_job.failed', 'sync_job.dead']);
  });

  it('count the lost attempt as a failed one, with its sync_job.failed event, when it had retries left', async ({ api, sandbox, pendingJob, strand, startSweepingWorker }) => {
    const { shop, supplier, job, messageId } = await pendingJob();
    // The worker that took attempt 2 died; pg-boss redelivers its message, which retries the job at once.
    await strand(job.id, messageId, { status: 'processing', attempts: 2, retriesLeft: 2 }, 'retry');
    await startSweepingWorker();
    expect(await settled(api, shop.user.token, job.id)).toMatchObject({ status: 'completed', attempts: 3 });
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(1);
    const events = await api.get(`/v1/events?reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    const types = events.body.data.map((event: any) => event.type).reverse();
    expect(types.filter((type: string) => type !== 'sync_job.created')).toEqual(['sync_job.failed', 'sync_job.completed']);
    const failed = events.body.data.find((event: any) => event.type === 'sync_job.failed').data.object;
    expect(failed).toMatchObject({ id: job.id, status: 'failed', attempts: 2, errorMessage: WORKER_LOST_ERROR });
    expect(failed.nextRetryAt).not.toBeNull();
  });

  it('are bounded by the queue: as many redeliveries as the policy allows retries', async ({ sql }) => {
    const queues = await sql<{ name: string; retry_limit: number }>(
      `select name, retry_limit from pgboss.queue where name in ('sync-job.process', 'fulfillment.propagate') order by name`,
    );
    expect(queues).toEqual([
      { name: 'fulfillment.propagate', retry_limit: 3 },
      { name: 'sync-job.process', retry_limit: 3 },
    ]);
  });
});
