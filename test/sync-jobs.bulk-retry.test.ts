/**
 * POST /v1/sync_jobs/bulk_retry on the real database and queue. The dead and failed jobs are made
 * by a real worker process against the sandbox (a supplier that always fails, one that rate limits
 * for ten minutes); that worker is then stopped, so what bulk retry did stays observable: retried
 * jobs wait as pending with their new queue message. For the 1,500-job case one real dead job is
 * copied in SQL (new ids and order numbers, its lifecycle columns as they are).
 */
import { randomBytes } from 'node:crypto';
import { describe, expect } from 'vitest';
import { newId } from '../src/shared/ids.ts';
import { queryRows } from './support/database.ts';
import { registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { addSupplier, auditOf, createJob, lineOf, openShop, queueMessage, seedResellerOrder, waitForJob, type Shop, type Supplier } from './support/sync-jobs.ts';

test.override('serviceEnv', { ROLE: 'api' });

type JobRow = Record<string, unknown>;

let nextOrderNumber = 900_000_000;

const ownerIdOf = (shop: Shop): string => (shop.reseller as unknown as { ownerId: string }).ownerId;

/** The rows of a dead and of a failed job as the worker left them, read once the worker made them. */
let deadTemplate: JobRow;
let failedTemplate: JobRow;

const it = test
  /** A supplier whose every order fails (dead after 4 attempts), or which rate limits once for 10 minutes (failed, retry far away). */
  .extend('supplierThat', { scope: 'file' }, ({ api, sandbox }) => async (behaviour: 'dies' | 'waits', shop: Shop): Promise<Supplier> => {
    const supplier = await addSupplier(api, shop, { vendorTag: `Acme ${randomBytes(3).toString('hex')}` });
    sandbox.setFaults(supplier.shopDomain, behaviour === 'dies' ? { alwaysFail: true, status: 500 } : { rateLimitNext: 100, retryAfterSeconds: 600 });
    return supplier;
  })
  .extend('jobThatEnds', { scope: 'file' }, ({ api, sandbox }) => async (shop: Shop, supplier: Supplier, status: 'dead' | 'failed') => {
    const orderId = seedResellerOrder(sandbox, shop, [lineOf(supplier.vendorTag)]);
    const job = await createJob(api, shop.user.token, supplier.id, orderId);
    return waitForJob(api, shop.user.token, job.id, (j) => j.status === status, 20_000, status);
  })
  .extend('bulkRetry', { scope: 'file' }, ({ api }) => (token: string, body: unknown) => api.post('/v1/sync_jobs/bulk_retry', { token, body }))
  .extend('readRow', { scope: 'file' }, ({ service }) => async (id: string): Promise<JobRow> =>
    (await queryRows<JobRow>(service.databaseUrl, 'select * from sync_jobs where id = $1', [id]))[0]!)
  /**
   * Inserts `count` copies of a job row (as the worker left it: status, retries left, error) for another
   * store and supplier, under new ids and order numbers, created one millisecond apart from now on.
   * Returns their ids, oldest first.
   */
  .extend('copiesOf', { scope: 'file' }, ({ service }) => async (template: JobRow, owner: Shop, supplier: Supplier, count: number): Promise<string[]> => {
    const ids = Array.from({ length: count }, () => newId('syncJob'));
    const firstOrder = nextOrderNumber;
    nextOrderNumber += count;
    await queryRows(
      service.databaseUrl,
      `insert into sync_jobs (id, owner_id, reseller_store_id, source_store_id, external_order_id, origin, status, attempts, source_order_id,
         error_message, completed_at, failed_at, dead_at, retries_left, "order", queue_message_id, version, created_at, updated_at)
       select c.id, $3, $4, $5, ($6::bigint + c.n)::text, t.origin, t.status, t.attempts, t.source_order_id,
         t.error_message, t.completed_at, t.failed_at, t.dead_at, t.retries_left, t."order", null, 1,
         date_trunc('milliseconds', now()) + c.n * interval '1 millisecond', t.updated_at
       from jsonb_populate_record(null::sync_jobs, $1::jsonb) as t, unnest($2::text[]) with ordinality as c(id, n)`,
      [JSON.stringify(template), ids, ownerIdOf(owner), owner.reseller.id, supplier.id, firstOrder],
    );
    return ids;
  })
  /** A dead or failed job as the worker leaves one, copied in SQL now that the worker is gone. */
  .extend('jobThatEndsInSql', { scope: 'file' }, ({ copiesOf }) => async (owner: Shop, supplier: Supplier, status: 'dead' | 'failed'): Promise<string> => {
    const [id] = await copiesOf(status === 'dead' ? deadTemplate : failedTemplate, owner, supplier, 1);
    return id!;
  });

describe('POST /v1/sync_jobs/bulk_retry', () => {
  let shop: Shop;
  let otherShop: Shop;
  let dying: Supplier;
  let waiting: Supplier;
  const dead: any[] = [];
  let failed: any;
  let deadElsewhere: any;
  let strangersDead: any;

  // A worker makes the dead and failed jobs the tests need, then stops: what they retry stays pending.
  it.beforeAll(async ({ api, startWorker, supplierThat, jobThatEnds, readRow }) => {
    const worker = await startWorker();
    shop = await openShop(api);
    otherShop = await openShop(api, {}, shop.user);
    dying = await supplierThat('dies', shop);
    waiting = await supplierThat('waits', shop);
    const elsewhere = await supplierThat('dies', otherShop);
    const stranger = await openShop(api);
    const strangersSupplier = await supplierThat('dies', stranger);
    [dead[0], dead[1], failed, deadElsewhere, strangersDead] = await Promise.all([
      jobThatEnds(shop, dying, 'dead'),
      jobThatEnds(shop, dying, 'dead'),
      jobThatEnds(shop, waiting, 'failed'),
      jobThatEnds(otherShop, elsewhere, 'dead'),
      jobThatEnds(stranger, strangersSupplier, 'dead'),
    ]);
    // As the worker left them, before the tests retry them.
    [deadTemplate, failedTemplate] = await Promise.all([readRow(dead[0].id), readRow(failed.id)]);
    await worker.stop();
  }, 60_000);

  it('retries each matching job as a single retry would: pending, a new queue message, audited with bulk = true', async ({ service, api, bulkRetry }) => {
    const before = (await queryRows<{ queue_message_id: string | null }>(service.databaseUrl, 'select queue_message_id from sync_jobs where id = $1', [failed.id]))[0]!;
    const response = await bulkRetry(shop.user.token, { status: ['dead', 'failed'], reseller_store_id: shop.reseller.id });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body).toEqual({
      object: 'bulk_retry',
      retried: 3,
      syncJobIds: [dead[0].id, dead[1].id, failed.id].sort(),
      has_more: false,
      request_id: expect.any(String),
    });

    for (const job of [dead[0], dead[1], failed]) {
      const now = (await api.get(`/v1/sync_jobs/${job.id}`, { token: shop.user.token })).body;
      expect(now).toMatchObject({ status: 'pending', attempts: job.attempts, errorMessage: null, failedAt: null, deadAt: null });
      const [row] = await queryRows<{ queue_message_id: string; retries_left: number }>(
        service.databaseUrl,
        `select queue_message_id, retries_left from sync_jobs where id = $1`,
        [job.id],
      );
      expect(row!.retries_left).toBe(3);
      expect(await queueMessage(service.databaseUrl, row!.queue_message_id)).toMatchObject({ state: 'created', name: 'sync-job.process', data: { syncJobId: job.id } });
      const retried = (await auditOf(api, shop.user.token, job.id)).filter((entry) => entry.action === 'sync_job.retried');
      expect(retried).toEqual([
        expect.objectContaining({ actorId: ownerIdOf(shop), metadata: expect.objectContaining({ bulk: true, via: 'jwt', attempts: job.attempts, externalOrderId: job.externalOrderId }) }),
      ]);
    }
    // The failed job's scheduled automatic retry is stale now: only the new message may move it.
    const after = (await queryRows<{ queue_message_id: string }>(service.databaseUrl, 'select queue_message_id from sync_jobs where id = $1', [failed.id]))[0]!;
    expect(after.queue_message_id).not.toBe(before.queue_message_id);

    // Nothing else moved: the other store's and the other user's dead jobs.
    for (const [job, token] of [[deadElsewhere, shop.user.token], [strangersDead, undefined]] as const) {
      const [row] = await queryRows<{ status: string }>(service.databaseUrl, 'select status from sync_jobs where id = $1', [job.id]);
      expect(row!.status, token ? 'the other store' : "the other user's").toBe('dead');
    }
  });

  it('filters by status, source store and creation time; another user\'s jobs are never matched', async ({ service, api, bulkRetry, jobThatEndsInSql }) => {
    const [a, b] = await Promise.all([jobThatEndsInSql(shop, dying, 'dead'), jobThatEndsInSql(shop, waiting, 'failed')]);
    expect((await bulkRetry(shop.user.token, { status: 'failed', reseller_store_id: shop.reseller.id })).body).toMatchObject({ retried: 1, syncJobIds: [b] });
    expect((await bulkRetry(shop.user.token, { status: 'dead', source_store_id: waiting.id })).body).toMatchObject({ retried: 0, syncJobIds: [], has_more: false });
    const createdAt = (await queryRows<{ created_at: Date }>(service.databaseUrl, "select created_at from sync_jobs where id = $1", [a]))[0]!.created_at;
    const at = (offsetMs: number) => new Date(createdAt.getTime() + offsetMs).toISOString();
    expect((await bulkRetry(shop.user.token, { status: 'dead', source_store_id: dying.id, created_after: at(0) })).body.retried).toBe(0);
    expect((await bulkRetry(shop.user.token, { status: 'dead', source_store_id: dying.id, created_before: at(0) })).body.retried).toBe(0);
    expect((await bulkRetry(shop.user.token, { status: 'dead', source_store_id: dying.id, created_after: at(-1), created_before: at(1) })).body).toMatchObject({
      retried: 1,
      syncJobIds: [a],
    });
    // Another user names this user's store: nothing of it is theirs.
    const stranger = await registerUser(api);
    const c = await jobThatEndsInSql(shop, dying, 'dead');
    expect((await bulkRetry(stranger.token, { status: 'dead', reseller_store_id: shop.reseller.id })).body).toMatchObject({ retried: 0, has_more: false });
    expect((await queryRows<{ status: string }>(service.databaseUrl, 'select status from sync_jobs where id = $1', [c]))[0]!.status).toBe('dead');
  });

  it('refuses what it cannot retry and misspelt filters', async ({ api, bulkRetry }) => {
    for (const body of [
      { status: 'pending' },
      { status: [] },
      {},
      { status: 'dead', reseller_store: shop.reseller.id },
      { status: 'dead', created_after: 'yesterday' },
      // Well-formed, yet no time: an offset past 23:59, the year 0.
      { status: 'dead', created_after: '2024-01-01T00:00:00+99:99' },
      { status: 'dead', created_before: '0000-01-01T00:00:00Z' },
    ]) {
      const response = await bulkRetry(shop.user.token, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.code).toBe('validation_failed');
    }
    expect((await api.post('/v1/sync_jobs/bulk_retry', { body: { status: 'dead' } })).status).toBe(401);
  });

  it('retries 1,500 dead jobs over two calls of at most 1,000, oldest first, each written by one statement', async ({ service, api, bulkRetry, copiesOf, jobThatEndsInSql }) => {
    const owner = await openShop(api);
    const template = await jobThatEndsInSql(owner, await addSupplier(api, owner, { vendorTag: 'Acme' }), 'dead');
    const ids = [template, ...(await copiesOf(deadTemplate, owner, await addSupplier(api, owner), 1_499))];

    const first = await bulkRetry(owner.user.token, { status: 'dead' });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ retried: 1_000, has_more: true });
    expect(first.body.syncJobIds).toEqual(ids.slice(0, 1_000));
    const second = await bulkRetry(owner.user.token, { status: 'dead' });
    expect(second.body).toMatchObject({ retried: 500, has_more: false });
    expect(second.body.syncJobIds).toEqual(ids.slice(1_000));
    expect((await bulkRetry(owner.user.token, { status: 'dead' })).body).toMatchObject({ retried: 0, syncJobIds: [], has_more: false });

    const [summary] = await queryRows<{ pending: string; updated_ats: string; messages: string; audits: string; audit_times: string }>(
      service.databaseUrl,
      `select count(*) filter (where j.status = 'pending') as pending,
              count(distinct j.updated_at) as updated_ats,
              count(m.id) filter (where m.state = 'created') as messages,
              (select count(*) from audit_entries a where a.resource_id = any($1) and a.action = 'sync_job.retried' and a.metadata->>'bulk' = 'true') as audits,
              (select count(distinct a.created_at) from audit_entries a where a.resource_id = any($1) and a.action = 'sync_job.retried') as audit_times
       from sync_jobs j left join pgboss.job m on m.id::text = j.queue_message_id and m.data->>'syncJobId' = j.id
       where j.id = any($1)`,
      [ids],
    );
    // Every job pending with its own live message and one audit entry; each call wrote its jobs
    // and their audit entries together (one time each), not one transaction per job.
    expect(summary).toEqual({ pending: '1500', updated_ats: '2', messages: '1500', audits: '1500', audit_times: '2' });
  }, 60_000);

  it('two bulk retries racing over the same jobs retry each job once; the loser skips the ones it lost', async ({ service, api, bulkRetry, copiesOf, jobThatEndsInSql }) => {
    const owner = await openShop(api);
    const template = await jobThatEndsInSql(owner, await addSupplier(api, owner, { vendorTag: 'Acme' }), 'dead');
    const ids = [template, ...(await copiesOf(deadTemplate, owner, await addSupplier(api, owner), 399))];
    const [one, two] = await Promise.all([bulkRetry(owner.user.token, { status: 'dead' }), bulkRetry(owner.user.token, { status: 'dead' })]);
    expect([one.status, two.status]).toEqual([200, 200]);
    const retried = [...one.body.syncJobIds, ...two.body.syncJobIds];
    expect(retried.sort()).toEqual([...ids].sort());
    const [counts] = await queryRows<{ audits: string; messages: string }>(
      service.databaseUrl,
      `select (select count(*) from audit_entries where resource_id = any($1) and action = 'sync_job.retried') as audits,
              (select count(*) from pgboss.job where name = 'sync-job.process' and data->>'syncJobId' = any($1) and state = 'created') as messages`,
      [ids],
    );
    expect(counts).toEqual({ audits: '400', messages: '400' });
  });
});
