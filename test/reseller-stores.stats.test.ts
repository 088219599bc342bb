/**
 * GET /v1/reseller_stores/{id}/stats: counts by status kept by the database's triggers, the oldest
 * pending job, the last order. First with jobs a real worker moves through every status (one
 * message at a time, so a slow platform call keeps one job processing and the next one pending),
 * then with rows in every status written straight to the tables, moved and deleted in SQL, which
 * is what the counting triggers must follow whoever writes.
 */
import { describe, expect } from 'vitest';
import { newId } from '../src/shared/ids.ts';
import type { Sandbox } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { addSupplier, createJob, getJob, lineOf, openShop, seedResellerOrder, waitForJob, type Shop, type Supplier } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

// One message in flight per queue: a job held by a slow platform keeps the next one waiting.
test.override('serviceEnv', { WORKER_CONCURRENCY: '1' });

const it = test.extend('statsOf', { scope: 'file' }, ({ api }) => async (shop: Shop, token = shop.user.token) =>
  api.get(`/v1/reseller_stores/${shop.reseller.id}/stats`, { token }));
const ZERO = { pending: 0, processing: 0, completed: 0, failed: 0, dead: 0 };
const NO_FULFILLMENTS = { ...ZERO, skipped: 0 };

describe('GET /v1/reseller_stores/{id}/stats', () => {
  it('a new store: zero everywhere, nothing pending, no order yet', async ({ api, statsOf }) => {
    const shop = await openShop(api);
    const response = await statsOf(shop);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      syncJobs: ZERO,
      fulfillments: NO_FULFILLMENTS,
      oldestPendingSeconds: null,
      lastOrderAt: null,
      lastReconciledAt: null,
      attention: { too_late: 0, unsupported: 0, supplier_cancelled: 0, stale: 0, cancellation_dead: 0, job_dead: 0, fulfillment_dead: 0 },
      cancellations: {
        byStatus: { pending: 0, processing: 0, completed: 0, failed: 0, dead: 0 },
        byOutcome: { cancelled: 0, not_placed: 0, too_late: 0, unsupported: 0 },
      },
      request_id: expect.any(String),
    });
  });

  it('counts jobs the worker moves through every status', async ({ api, sandbox, statsOf }) => {
    const shop = await openShop(api);
    const supplier = async (faults: Parameters<Sandbox['setFaults']>[1]): Promise<Supplier> => {
      const created = await addSupplier(api, shop, { vendorTag: `Vendor ${newId('syncJob').slice(-6)}` });
      sandbox.setFaults(created.shopDomain, faults);
      return created;
    };
    const job = async (target: Supplier) =>
      createJob(api, shop.user.token, target.id, seedResellerOrder(sandbox, shop, [lineOf(target.vendorTag)]));
    const until = (id: string, status: string) => waitForJob(api, shop.user.token, id, (j) => j.status === status, 20_000, status);

    await until((await job(await supplier({}))).id, 'completed');
    await until((await job(await supplier({ alwaysFail: true }))).id, 'dead');
    // A 429 asking for 600 s pauses that supplier's store: its next job is postponed to the pause's end, pending.
    const paused = await supplier({ rateLimitNext: 10, retryAfterSeconds: 600 });
    await until((await job(paused)).id, 'failed');
    // The slow supplier holds the order POST until the test releases it: that job is processing until then.
    const slowSupplier = await supplier({ holdRequestsNext: 1 });
    const slow = await job(slowSupplier);
    await waitFor(async () => sandbox.heldRequestCount(slowSupplier.shopDomain) === 1, 15_000, 'the order POST to be held');
    const waiting = await job(paused);

    const response = await statsOf(shop);
    expect(response.body.syncJobs).toEqual({ pending: 1, processing: 1, completed: 1, failed: 1, dead: 1 });
    expect(response.body.fulfillments).toEqual(NO_FULFILLMENTS);
    expect(response.body.oldestPendingSeconds).toBeGreaterThanOrEqual(0);
    expect(response.body.lastOrderAt).toBe(waiting.createdAt);

    expect(sandbox.releaseRequests(slowSupplier.shopDomain)).toBe(1);
    await until(slow.id, 'completed');
    expect((await statsOf(shop)).body).toMatchObject({ syncJobs: { pending: 1, processing: 0, completed: 2, failed: 1, dead: 1 } });
    expect((await getJob(api, shop.user.token, waiting.id)).status, 'the paused store\'s job still waits for its turn').toBe('pending');
  }, 60_000);

  it('counts rows in every status, whoever writes them, and follows updates and deletes', async ({ service, api, statsOf }) => {
    const shop = await openShop(api);
    const other = await openShop(api, {}, shop.user);
    const supplier = await addSupplier(api, shop);
    const perStatus = { pending: 1, processing: 2, completed: 3, failed: 4, dead: 5 };
    const jobIds = await insertJobs(service.databaseUrl, shop, supplier, perStatus);
    await insertJobs(service.databaseUrl, other, await addSupplier(api, other), { dead: 7 });
    await insertFulfillments(service.databaseUrl, shop, jobIds[0]!, { pending: 5, processing: 4, completed: 3, failed: 2, dead: 1, skipped: 6 });

    let stats = (await statsOf(shop)).body;
    expect(stats.syncJobs).toEqual(perStatus);
    expect(stats.fulfillments).toEqual({ pending: 5, processing: 4, completed: 3, failed: 2, dead: 1, skipped: 6 });
    expect((await statsOf(other)).body.syncJobs).toEqual({ ...ZERO, dead: 7 });

    // The pending job has waited 90 s; the newest job names the last order.
    await queryRows(service.databaseUrl, `update sync_jobs set updated_at = now() - interval '90 seconds' where reseller_store_id = $1 and status = 'pending'`, [shop.reseller.id]);
    const [newest] = await queryRows<{ created_at: Date }>(service.databaseUrl, 'select created_at from sync_jobs where reseller_store_id = $1 order by id desc limit 1', [shop.reseller.id]);
    stats = (await statsOf(shop)).body;
    expect(stats.oldestPendingSeconds).toBeGreaterThanOrEqual(90);
    expect(stats.oldestPendingSeconds).toBeLessThan(100);
    expect(stats.lastOrderAt).toBe(newest!.created_at.toISOString());

    // Moves in one statement across statuses, and deletes, are followed.
    await queryRows(service.databaseUrl, `update sync_jobs set status = 'pending' where reseller_store_id = $1 and status in ('dead', 'failed')`, [shop.reseller.id]);
    await queryRows(service.databaseUrl, `delete from sync_jobs where reseller_store_id = $1 and status = 'completed'`, [shop.reseller.id]);
    await queryRows(service.databaseUrl, `update fulfillments set status = 'completed' where reseller_store_id = $1 and status = 'pending'`, [shop.reseller.id]);
    stats = (await statsOf(shop)).body;
    expect(stats.syncJobs).toEqual({ pending: 10, processing: 2, completed: 0, failed: 0, dead: 0 });
    expect(stats.fulfillments).toEqual({ pending: 0, processing: 4, completed: 8, failed: 2, dead: 1, skipped: 6 });
    expect((await statsOf(other)).body.syncJobs).toEqual({ ...ZERO, dead: 7 });
  });

  it('lastReconciledAt: when the last successful reconciliation of the store finished', async ({ api, statsOf }) => {
    const shop = await openShop(api);
    const started = await api.post(`/v1/reseller_stores/${shop.reseller.id}/reconcile`, { token: shop.user.token, body: {} });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const run = await waitFor(async () => {
      const runs = (await api.get(`/v1/reseller_stores/${shop.reseller.id}/reconciliations`, { token: shop.user.token })).body.data as any[];
      const ours = runs.find((candidate) => candidate.id === started.body.reconciliationId);
      return ours?.status === 'succeeded' ? ours : null;
    }, 15_000, 'the reconciliation to succeed');
    expect(run.finishedAt).toEqual(expect.any(String));
    expect((await statsOf(shop)).body.lastReconciledAt).toBe(run.finishedAt);
  });

  it("another user's store is not found, and a token is required", async ({ api, statsOf }) => {
    const shop = await openShop(api);
    const stranger = await registerUser(api);
    const response = await statsOf(shop, stranger.token);
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('not_found');
    expect((await api.get(`/v1/reseller_stores/${shop.reseller.id}/stats`)).status).toBe(401);
  });
});

const ownerIdOf = (shop: Shop): string => (shop.reseller as unknown as { ownerId: string }).ownerId;
let nextOrder = 950_000_000;

/** Job rows of the store in the given statuses, in one statement each; returns their ids. */
async function insertJobs(databaseUrl: string, shop: Shop, supplier: Supplier, counts: Partial<Record<string, number>>): Promise<string[]> {
  const ids: string[] = [];
  for (const [status, count] of Object.entries(counts)) {
    const batch = Array.from({ length: count! }, () => newId('syncJob'));
    await queryRows(
      databaseUrl,
      `insert into sync_jobs (id, owner_id, reseller_store_id, source_store_id, external_order_id, origin, status, attempts, retries_left, version, created_at, updated_at)
       select id, $2, $3, $4, ($5::bigint + n)::text, 'manual', $6, 1, 3, 1, now(), now() from unnest($1::text[]) with ordinality as c(id, n)`,
      [batch, ownerIdOf(shop), shop.reseller.id, supplier.id, nextOrder, status],
    );
    nextOrder += count!;
    ids.push(...batch);
  }
  return ids;
}

async function insertFulfillments(databaseUrl: string, shop: Shop, syncJobId: string, counts: Record<string, number>): Promise<void> {
  for (const [status, count] of Object.entries(counts)) {
    await queryRows(
      databaseUrl,
      `insert into fulfillments (id, owner_id, reseller_store_id, sync_job_id, dedupe_key, status, attempts, tracking, retries_left, version, created_at, updated_at)
       select $1 || n, $2, $3, $4, $5 || n, $5, 0, '{"numbers": [], "urls": [], "company": null}', 3, 1, now(), now() from generate_series(1, $6::int) as n`,
      [newId('fulfillment'), ownerIdOf(shop), shop.reseller.id, syncJobId, status, count],
    );
  }
}
