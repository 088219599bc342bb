/**
 * Sync job failures against the sandbox's injected faults: automatic retries with backoff, death,
 * Retry-After, lost responses, manual retry, and stale queued retries.
 */
import { afterAll, describe, expect } from 'vitest';
import type { Sandbox } from './sandbox/server.ts';
import { expectError, ISO_UTC } from './support/assertions.ts';
import { test as it } from './support/fixtures.ts';
import { startTestService, type TestService } from './support/service.ts';
import {
  addSupplier,
  auditOf,
  createJob,
  jobRow,
  lineOf,
  logLines,
  openShop,
  orderPosts,
  queueMessage,
  seedResellerOrder,
  settled,
  waitForJob,
  type Shop,
  type Supplier,
} from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

const BASE_DELAY_MS = 100; // the test service's SYNC_RETRY_BASE_DELAY_MS

/** A shop with one fresh supplier (custom platform, 25 % markup) and an order for it. */
async function jobFor(sandbox: Sandbox, target: TestService, faults: Parameters<Sandbox['setFaults']>[1] = {}) {
  const shop = await openShop(target.api);
  const supplier = await addSupplier(target.api, shop, { vendorTag: 'Acme' });
  sandbox.setFaults(supplier.shopDomain, faults);
  const orderId = seedResellerOrder(sandbox, shop, [lineOf('Acme')]);
  const job = await createJob(target.api, shop.user.token, supplier.id, orderId);
  return { shop, supplier, job };
}

const gapsMs = (times: string[]) => times.slice(1).map((at, index) => Date.parse(at) - Date.parse(times[index]!));

describe('automatic retries', () => {
  it('a store that always fails: 4 attempts with exponential backoff, then dead', async ({ service, api, sandbox }) => {
    const { shop, supplier, job } = await jobFor(sandbox, service, { alwaysFail: true, status: 503 });
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 4, sourceOrderId: null, completedAt: null });
    expect(dead.errorMessage).toContain('503');
    expect(dead.failedAt).toMatch(ISO_UTC);
    expect(dead.deadAt).toMatch(ISO_UTC);
    expect(Date.parse(dead.deadAt)).toBeGreaterThanOrEqual(Date.parse(dead.failedAt));

    const posts = orderPosts(sandbox, supplier.shopDomain);
    expect(posts.map((post) => post.status)).toEqual([503, 503, 503, 503]);
    expect(sandbox.ordersFor(supplier.shopDomain)).toEqual([]);
    // Backoff: base, 2 × base, 4 × base between the attempts (at least; the queue adds its latency).
    const gaps = gapsMs(posts.map((post) => post.at));
    gaps.forEach((gap, index) => expect(gap, `gap ${index + 1}`).toBeGreaterThanOrEqual(BASE_DELAY_MS * 2 ** index - 5));

    const audit = await auditOf(api, shop.user.token, job.id);
    expect(audit.map((entry) => entry.action)).toEqual(['sync_job.created', 'sync_job.dead']);
    expect(audit[1]).toMatchObject({ actorId: 'system', metadata: { attempts: 4, errorMessage: dead.errorMessage } });
    expect(audit[1].metadata).toEqual({ externalOrderId: job.externalOrderId, sourceStoreId: supplier.id, attempts: 4, errorMessage: dead.errorMessage });
    // Dead means no message is left that could move the job.
    expect((await jobRow(service.databaseUrl, job.id)).queue_message_id).toBeNull();
  });

  it('a store that fails twice: completed on attempt 3 with exactly one order', async ({ service, api, sandbox }) => {
    const { shop, supplier, job } = await jobFor(sandbox, service, { failNext: 2 });
    const done = await settled(api, shop.user.token, job.id);
    expect(done).toMatchObject({ status: 'completed', attempts: 3, errorMessage: null, deadAt: null });
    expect(orderPosts(sandbox, supplier.shopDomain).map((post) => post.status)).toEqual([500, 500, 201]);
    const orders = sandbox.ordersFor(supplier.shopDomain);
    expect(orders).toHaveLength(1);
    expect(done.sourceOrderId).toBe(String(orders[0]!.id));
    expect((await auditOf(api, shop.user.token, job.id)).map((entry) => entry.action)).toEqual(['sync_job.created', 'sync_job.completed']);
  });

  it('a 429 with a short Retry-After is waited out within the attempt', async ({ service, api, sandbox }) => {
    const { shop, supplier, job } = await jobFor(sandbox, service, { rateLimitNext: 1, retryAfterSeconds: 1 });
    const done = await settled(api, shop.user.token, job.id);
    expect(done).toMatchObject({ status: 'completed', attempts: 1 });
    const posts = orderPosts(sandbox, supplier.shopDomain);
    expect(posts.map((post) => post.status)).toEqual([429, 201]);
    expect(gapsMs(posts.map((post) => post.at))[0]).toBeGreaterThanOrEqual(1000 - 5);
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
  });

  it('a 429 with a long Retry-After fails the attempt and the next one waits as asked', async ({ service, api, sandbox }) => {
    const { shop, supplier, job } = await jobFor(sandbox, service, { rateLimitNext: 1, retryAfterSeconds: 6 });
    await waitForJob(api, shop.user.token, job.id, (current) => current.status === 'failed');
    const done = await settled(api, shop.user.token, job.id, 20_000);
    expect(done).toMatchObject({ status: 'completed', attempts: 2 });
    const posts = orderPosts(sandbox, supplier.shopDomain);
    expect(posts.map((post) => post.status)).toEqual([429, 201]);
    expect(gapsMs(posts.map((post) => post.at))[0]).toBeGreaterThanOrEqual(6000 - 5);
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
  }, 30_000);

  it('a lost response (order created, connection dropped): the retry gets the same order back', async ({ service, api, sandbox }) => {
    const { shop, supplier, job } = await jobFor(sandbox, service, { acceptThenDropNext: 1 });
    const done = await settled(api, shop.user.token, job.id);
    expect(done).toMatchObject({ status: 'completed', attempts: 2, errorMessage: null });
    const orders = sandbox.ordersFor(supplier.shopDomain);
    expect(orders).toHaveLength(1);
    expect(orders[0]!.idempotencyKey).toBe(`sync-job:${job.id}`);
    expect(done.sourceOrderId).toBe(String(orders[0]!.id));
    const posts = orderPosts(sandbox, supplier.shopDomain);
    expect(posts.map((post) => [post.status, post.idempotentReplay])).toEqual([
      [null, false],
      [201, true],
    ]);
  });

  it('a job that cannot be done ends dead with the reason, and places nothing', async ({ api, sandbox }) => {
    // The reseller order does not exist on the reseller platform (404).
    const shop = await openShop(api);
    const supplier = await addSupplier(api, shop, { vendorTag: 'Acme' });
    const missing = await createJob(api, shop.user.token, supplier.id, '999999999');
    // The order has no line from the supplier's vendor.
    const orderId = seedResellerOrder(sandbox, shop, [lineOf('Someone else')]);
    const unmatched = await createJob(api, shop.user.token, supplier.id, orderId);

    const [a, b] = await Promise.all([settled(api, shop.user.token, missing.id), settled(api, shop.user.token, unmatched.id)]);
    expect(a).toMatchObject({ status: 'dead', sourceOrderId: null });
    expect(a.errorMessage).toContain('404');
    expect(b).toMatchObject({ status: 'dead', sourceOrderId: null });
    expect(b.errorMessage).toContain('no line from vendor "Acme"');
    expect(sandbox.ordersFor(supplier.shopDomain)).toEqual([]);
  });

  it('a dropped connection before the platform acted is retried too', async ({ service, api, sandbox }) => {
    const { shop, supplier, job } = await jobFor(sandbox, service, { dropNext: 1 });
    const done = await settled(api, shop.user.token, job.id);
    expect(done).toMatchObject({ status: 'completed', attempts: 2 });
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
  });
});

describe('manual retry', () => {
  it('revives a dead job: pending, error fields cleared, attempts kept, then completed on attempt 5', async ({ service, api, sandbox }) => {
    const { shop, supplier, job } = await jobFor(sandbox, service, { alwaysFail: true });
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 4 });
    sandbox.clearFaults(supplier.shopDomain);

    const retried = await api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body).toMatchObject({ id: job.id, status: 'pending', attempts: 4, errorMessage: null, failedAt: null, deadAt: null, completedAt: null });
    expect(retried.body.request_id).toBe(retried.headers.get('x-request-id'));

    const done = await settled(api, shop.user.token, job.id);
    expect(done).toMatchObject({ status: 'completed', attempts: 5, errorMessage: null, failedAt: null, deadAt: null });
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(5);

    const audit = await auditOf(api, shop.user.token, job.id);
    expect(audit.map((entry) => entry.action)).toEqual(['sync_job.created', 'sync_job.dead', 'sync_job.retried', 'sync_job.completed']);
    expect(audit[2]).toMatchObject({ metadata: { attempts: 4 } });
    expect(audit[2].actorId).toMatch(/^usr_/);
  });

  it('concurrent retries of one dead job revive it once; every other answers 400 sync_job_not_retryable, as the contract declares', async ({ service, api, sandbox }) => {
    const { shop, supplier, job } = await jobFor(sandbox, service, { alwaysFail: true });
    expect(await settled(api, shop.user.token, job.id)).toMatchObject({ status: 'dead', attempts: 4 });
    sandbox.clearFaults(supplier.shopDomain);
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token })),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200), JSON.stringify(responses.map((r) => r.body))).toHaveLength(1);
    // Was 7 × 409 conflict, a status the route does not declare.
    expect(statuses.filter((status) => status === 400)).toHaveLength(19);
    for (const response of responses.filter((r) => r.status !== 200)) expectError(response, 400, 'sync_job_not_retryable');
    const done = await settled(api, shop.user.token, job.id);
    expect(done).toMatchObject({ status: 'completed', attempts: 5 });
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(5);
    const actions = (await auditOf(api, shop.user.token, job.id)).map((entry) => entry.action);
    expect(actions.filter((action) => action === 'sync_job.retried')).toHaveLength(1);
  });

  it('grants three automatic retries again: a revived job that keeps failing dies after attempt 8', async ({ service, api, sandbox }) => {
    const { shop, supplier, job } = await jobFor(sandbox, service, { alwaysFail: true });
    expect(await settled(api, shop.user.token, job.id)).toMatchObject({ status: 'dead', attempts: 4 });
    const retried = await api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token });
    expect(retried.status).toBe(200);
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead).toMatchObject({ status: 'dead', attempts: 8 });
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(8);
    const actions = (await auditOf(api, shop.user.token, job.id)).map((entry) => entry.action);
    expect(actions).toEqual(['sync_job.created', 'sync_job.dead', 'sync_job.retried', 'sync_job.dead']);
  });
});

describe('stale queued retries', () => {
  const SLOW_BASE_DELAY_MS = 3000;
  let slow: TestService;
  it.beforeAll(async ({ sandbox }) => {
    // Debug logs show the worker ignoring the stale message.
    slow = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, SYNC_RETRY_BASE_DELAY_MS: String(SLOW_BASE_DELAY_MS), LOG_LEVEL: 'debug' });
  });
  afterAll(async () => {
    await slow?.stop();
  });

  /** Fails the first attempt, so an automatic retry is queued `SLOW_BASE_DELAY_MS` out; returns its message id. */
  async function failedOnce(sandbox: Sandbox): Promise<{ shop: Shop; supplier: Supplier; job: any; staleMessageId: string }> {
    const { shop, supplier, job } = await jobFor(sandbox, slow, { failNext: 1 });
    await waitForJob(slow.api, shop.user.token, job.id, (current) => current.status === 'failed');
    const row = await jobRow(slow.databaseUrl, job.id);
    expect(await queueMessage(slow.databaseUrl, row.queue_message_id!)).toMatchObject({ state: 'created' });
    return { shop, supplier, job, staleMessageId: row.queue_message_id! };
  }

  const staleIgnored = (messageId: string) => logLines(slow.logs, 'stale message ignored').some((line) => line.message_id === messageId);

  it('a manual retry supersedes the queued automatic one, which then does nothing', async ({ sandbox }) => {
    const { shop, supplier, job, staleMessageId } = await failedOnce(sandbox);
    const retried = await slow.api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    const done = await settled(slow.api, shop.user.token, job.id);
    expect(done).toMatchObject({ status: 'completed', attempts: 2 });

    // The stale message is delivered when due, and completes without touching the job.
    await waitFor(async () => (await queueMessage(slow.databaseUrl, staleMessageId))?.state === 'completed', 10_000, 'the stale message');
    expect(staleIgnored(staleMessageId)).toBe(true);
    const after = await jobRow(slow.databaseUrl, job.id);
    expect(after).toMatchObject({ status: 'completed', attempts: 2 });
    expect(await settled(slow.api, shop.user.token, job.id)).toEqual({ ...done, request_id: expect.any(String) });
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(2);
  }, 20_000);

  it('the stale message does not join in while the manually retried attempt is still in flight', async ({ sandbox }) => {
    const { shop, supplier, job, staleMessageId } = await failedOnce(sandbox);
    // The retried attempt's call outlasts the stale message's due time: the job is `processing`
    // when the stale message arrives, a status in which a message the job expects may take it.
    sandbox.setFaults(supplier.shopDomain, { latencyMs: SLOW_BASE_DELAY_MS + 1500 });
    const retried = await slow.api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token });
    expect(retried.status).toBe(200);
    await waitFor(async () => (await queueMessage(slow.databaseUrl, staleMessageId))?.state === 'completed', 10_000, 'the stale message');
    expect(staleIgnored(staleMessageId)).toBe(true);
    expect(await jobRow(slow.databaseUrl, job.id)).toMatchObject({ status: 'processing', attempts: 2 });

    const done = await settled(slow.api, shop.user.token, job.id);
    expect(done).toMatchObject({ status: 'completed', attempts: 2 });
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(2);
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
  }, 20_000);

  it('a failed job can be retried by hand while its automatic retry waits', async ({ sandbox }) => {
    const { shop, job } = await failedOnce(sandbox);
    const retried = await slow.api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ status: 'pending', attempts: 1, errorMessage: null, failedAt: null });
    const audit = await auditOf(slow.api, shop.user.token, job.id);
    expect(audit.map((entry) => entry.action)).toContain('sync_job.retried');
    await settled(slow.api, shop.user.token, job.id);
  });
});
