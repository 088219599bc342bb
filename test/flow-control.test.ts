/**
 * Flow control across processes and tenants (issue 15) and rate-limit pauses that spend no
 * attempt (issue 13, point 3), against the sandbox's enforced per-credential rate limit: one API
 * and two worker processes share each store's allowance; one tenant's backlog or bogus credential
 * never slows another tenant's orders; a 429 pauses the store for everyone for its (bounded)
 * Retry-After while the jobs not yet sent wait without spending attempts.
 */
import type { Platform } from '../src/orders/types.ts';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFulfillmentPayload, sendWebhook, startSandbox, type Sandbox } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { startTestProcess, startTestService, type TestProcess, type TestService } from './support/service.ts';
import { lineOf, logLines, newOrderId, orderPosts, settled, waitForJob } from './support/sync-jobs.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH } from './support/webhooks.ts';
import { waitFor } from './support/wait.ts';

/** The supplier's own limit in the sandbox, and the service's pacing of platform_a stores: the same. */
const LIMIT = { perSecond: 5, burst: 10 };
const PACING = `platform_a=${LIMIT.perSecond}:${LIMIT.burst}`;

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox?.close());

interface Tenant {
  token: string;
  reseller: { id: string; shopDomain: string; platform: Platform };
  webhookSecret: string;
}

async function openTenant(service: TestService, platform: Platform = 'platform_a'): Promise<Tenant> {
  const user = await registerUser(service.api);
  const webhookSecret = `whsec_${randomBytes(12).toString('hex')}`;
  const reseller = await createResellerStore(service.api, user.token, { platform, webhookSecret });
  return { token: user.token, reseller: { ...reseller, platform }, webhookSecret };
}

async function addSupplier(service: TestService, tenant: Tenant, overrides: Record<string, unknown> = {}) {
  return createSourceStore(service.api, tenant.token, tenant.reseller.id, { platform: 'platform_a', ...overrides });
}

/** Posts one orders/create webhook per vendor tag list, eight at a time; returns each order's job ids. */
async function postOrders(service: TestService, tenant: Tenant, vendorTag: string, count: number): Promise<string[]> {
  const jobIds: string[] = [];
  const ids = Array.from({ length: count }, () => Number(newOrderId()));
  for (let i = 0; i < ids.length; i += 8) {
    const answers = await Promise.all(ids.slice(i, i + 8).map((id) => postOrder(service, tenant, vendorTag, id)));
    jobIds.push(...answers.flat());
  }
  return jobIds;
}

async function postOrder(service: TestService, tenant: Tenant, vendorTag: string, id = Number(newOrderId())): Promise<string[]> {
  const { platform, shopDomain } = tenant.reseller;
  const payload = sandbox.buildOrderPayload(platform, { id, lines: [lineOf(vendorTag)] });
  // On the store too, as the platform has it (a fulfillment is added to it later).
  sandbox.seedOrder(shopDomain, platform, payload);
  const answer = await sendWebhook({
    targetUrl: `${service.url}${ORDERS_PATH}`,
    shopDomain: tenant.reseller.shopDomain,
    secret: tenant.webhookSecret,
    topic: 'orders/create',
    payload,
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return (answer.body as { syncJobIds: string[] }).syncJobIds;
}

/** Sends one order and measures from the webhook to its supplier receiving it (ms). */
async function latencyToSupplier(service: TestService, tenant: Tenant, supplier: { shopDomain: string; vendorTag: string }): Promise<number> {
  const before = sandbox.ordersFor(supplier.shopDomain).length;
  const sentAt = Date.now();
  await postOrder(service, tenant, supplier.vendorTag);
  const received = await waitFor(async () => sandbox.ordersFor(supplier.shopDomain)[before], 15_000, `an order at ${supplier.shopDomain}`);
  return Date.parse(received.createdAt) - sentAt;
}

async function jobRows(databaseUrl: string, ids: string[]) {
  return queryRows<{ id: string; status: string; attempts: number }>(databaseUrl, 'select id, status, attempts from sync_jobs where id = any($1::text[])', [ids]);
}

async function allCompleted(databaseUrl: string, ids: string[], timeoutMs: number): Promise<void> {
  await waitFor(
    async () => (await jobRows(databaseUrl, ids)).every((job) => job.status === 'completed'),
    timeoutMs,
    `${ids.length} completed jobs`,
  );
}

describe('one API and two worker processes on one database', () => {
  let api: TestService;
  let workers: TestProcess[];

  beforeAll(async () => {
    const shared = {
      ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      JWT_SECRET: randomBytes(32).toString('hex'),
      PLATFORM_BASE_URL: sandbox.baseUrlTemplate,
      PLATFORM_PACING: PACING,
    };
    api = await startTestService({ ...shared, ROLE: 'api' });
    workers = [];
    for (let i = 0; i < 2; i++) workers.push(await startTestProcess({ ...shared, ROLE: 'worker', DATABASE_URL: api.databaseUrl }));
  }, 60_000);
  afterAll(async () => {
    for (const worker of workers ?? []) await worker.stop();
    await api?.stop();
  });

  it("share a supplier's rate limit during a flash sale, while another reseller's orders go straight through", async () => {
    const busy = await openTenant(api);
    const supplier = await addSupplier(api, busy, { vendorTag: 'FlashCo' });
    sandbox.setFaults(supplier.shopDomain, { rateLimit: LIMIT });
    const quiet = await openTenant(api);
    const quietSupplier = await addSupplier(api, quiet, { vendorTag: 'QuietCo' });

    const flashSale = 60;
    const jobIds = await postOrders(api, busy, supplier.vendorTag, flashSale);
    expect(jobIds).toHaveLength(flashSale);

    // Meanwhile, the other reseller's orders reach their supplier at once: the backlog holds no worker.
    const latencies: number[] = [];
    for (let i = 0; i < 3; i++) latencies.push(await latencyToSupplier(api, quiet, quietSupplier));
    expect(Math.max(...latencies), `quiet reseller latencies ${latencies.join(', ')} ms`).toBeLessThan(2_000);
    expect(sandbox.ordersFor(supplier.shopDomain).length, 'the flash sale was still draining').toBeLessThan(flashSale);

    await allCompleted(api.databaseUrl, jobIds, 40_000);
    const posts = orderPosts(sandbox, supplier.shopDomain);
    const refused = posts.filter((post) => post.status === 429);
    expect(refused.length, 'answers 429').toBeLessThanOrEqual(2);
    // Every order placed once, each job at its first attempt: waiting for a turn spent none.
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(flashSale);
    expect(new Set(sandbox.ordersFor(supplier.shopDomain).map((order) => order.idempotencyKey)).size).toBe(flashSale);
    const jobs = await jobRows(api.databaseUrl, jobIds);
    expect(jobs.filter((job) => job.attempts > 1).length).toBeLessThanOrEqual(refused.length);

    // After the burst, the supplier's rate is used at ≥ 90 %: the turns the backlog was postponed to,
    // as the database handed them out (not when a loaded machine got round to the calls), follow one
    // another at the store's rate, never faster, with no turn left idle between them.
    const turns = (
      await queryRows<{ turn_at: string }>(
        api.databaseUrl,
        `select distinct data->>'turnAt' as turn_at from pgboss.job where name = 'sync-job.process' and data->>'turnAt' is not null and data->>'syncJobId' = any($1)`,
        [jobIds],
      )
    )
      .map((row) => Date.parse(row.turn_at))
      .sort((a, b) => a - b);
    expect(turns.length, 'jobs postponed to a turn').toBeGreaterThan(flashSale / 2);
    const intervalMs = 1000 / LIMIT.perSecond;
    const gaps = turns.slice(1).map((at, i) => at - turns[i]!);
    expect(Math.min(...gaps), 'turns closer than the rate allows').toBeGreaterThanOrEqual(0.99 * intervalMs);
    const perSecond = ((turns.length - 1) * 1000) / (turns.at(-1)! - turns[0]!);
    expect(perSecond, 'turns per second after the burst').toBeGreaterThanOrEqual(0.9 * LIMIT.perSecond);

    // Both workers placed orders; the rest of the backlog was postponed to its turns, not held in a slot.
    const startedBy = workers.map((worker) => logLines(worker.logs, 'attempt started').filter((line) => jobIds.includes(line.job_id as string)).length);
    for (const [i, count] of startedBy.entries()) expect(count, `jobs started by worker ${i + 1}`).toBeGreaterThan(0);
    const postponed = workers.map((worker) => worker.ctx.metrics.attemptsPostponed);
    const total = (await Promise.all(postponed.map(async (counter) => (await counter.get()).values.reduce((sum, v) => sum + v.value, 0)))).reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(0);
  }, 90_000);

  it("keep tenants apart: another user's records of the same supplier domain, with a bogus token and a backlog, do not delay the real one", async () => {
    const real = await openTenant(api);
    const accessToken = `real_${randomBytes(8).toString('hex')}`;
    const supplier = await addSupplier(api, real, { vendorTag: 'SharedCo', accessToken });
    sandbox.registerStore(supplier.shopDomain, { accessToken });
    sandbox.setFaults(supplier.shopDomain, { rateLimit: LIMIT });
    const intruder = await openTenant(api);
    await addSupplier(api, intruder, { vendorTag: 'SharedCo', shopDomain: supplier.shopDomain, accessToken: `bogus_${randomBytes(8).toString('hex')}` });

    const intruderJobs = await postOrders(api, intruder, 'SharedCo', 40);
    expect(intruderJobs).toHaveLength(40);
    // The intruder's 40 jobs (and their retries) are far more than the domain's burst of 10 ...
    await waitFor(
      async () => (await jobRows(api.databaseUrl, intruderJobs)).some((job) => job.attempts > 0),
      15_000,
      "the intruder's first attempts",
    );
    // ... yet they spend only the intruder's own allowance: the real tenant's order goes at once.
    const latency = await latencyToSupplier(api, real, supplier);
    expect(latency).toBeLessThan(2_000);
    const stillQueued = (await jobRows(api.databaseUrl, intruderJobs)).filter((job) => job.status !== 'dead' && job.status !== 'completed');
    expect(stillQueued.length, "the intruder's backlog was still there").toBeGreaterThan(0);
  }, 90_000);
});

describe('a 429 pauses its store for every process without spending attempts (issue 13)', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, MAX_RETRY_AFTER_MS: '10000' });
  });
  afterAll(() => service?.stop());

  /** The order POSTs the supplier received, oldest first, with their statuses. */
  const postsOf = (shopDomain: string) => orderPosts(sandbox, shopDomain).map((post) => ({ status: post.status, at: Date.parse(post.at) }));

  it('Retry-After: 10 fails only the refused attempt; the jobs not yet sent wait out the pause and complete at their first attempt', async () => {
    const tenant = await openTenant(service);
    const supplier = await addSupplier(service, tenant, { platform: 'custom', vendorTag: 'TenCo' });
    sandbox.setFaults(supplier.shopDomain, { rateLimitNext: 1, retryAfterSeconds: 10 });

    const jobIds = await postOrders(service, tenant, supplier.vendorTag, 20);
    await allCompleted(service.databaseUrl, jobIds, 30_000);

    const posts = postsOf(supplier.shopDomain);
    const refusedAt = posts.find((post) => post.status === 429)!.at;
    expect(posts.filter((post) => post.status === 429)).toHaveLength(1);
    // Nothing reached the store during the pause but calls already under way when it began.
    expect(posts.filter((post) => post.at > refusedAt + 1_000 && post.at < refusedAt + 9_900)).toEqual([]);
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(20);
    const jobs = await jobRows(service.databaseUrl, jobIds);
    expect(jobs.filter((job) => job.attempts === 2)).toHaveLength(1);
    expect(jobs.filter((job) => job.attempts !== 1 && job.attempts !== 2)).toEqual([]);
    expect(jobs.every((job) => job.status === 'completed')).toBe(true);
  }, 60_000);

  it('Retry-After: 3600 is bounded by MAX_RETRY_AFTER_MS, and a manual retry meanwhile is postponed, not failed', async () => {
    const tenant = await openTenant(service);
    const supplier = await addSupplier(service, tenant, { platform: 'custom', vendorTag: 'HourCo' });
    // First a job that dies (four 503s), to be retried by hand during the pause.
    sandbox.setFaults(supplier.shopDomain, { failNext: 4, status: 503 });
    const [deadJob] = await postOrders(service, tenant, supplier.vendorTag, 1);
    expect(await settled(service.api, tenant.token, deadJob!)).toMatchObject({ status: 'dead', attempts: 4 });

    sandbox.setFaults(supplier.shopDomain, { rateLimitNext: 1, retryAfterSeconds: 3600 });
    const jobIds = await postOrders(service, tenant, supplier.vendorTag, 5);
    await waitFor(async () => postsOf(supplier.shopDomain).some((post) => post.status === 429), 10_000, 'the 429');
    const refusedAt = postsOf(supplier.shopDomain).find((post) => post.status === 429)!.at;

    const retried = await service.api.post(`/v1/sync_jobs/${deadJob}/retry`, { token: tenant.token });
    expect(retried.status).toBe(200);
    const revived = await waitForJob(service.api, tenant.token, deadJob!, (job) => job.status === 'completed', 20_000);
    expect(revived.attempts).toBe(5);
    await allCompleted(service.databaseUrl, jobIds, 20_000);

    const posts = postsOf(supplier.shopDomain);
    const after = posts.filter((post) => post.at > refusedAt + 1_000);
    // The pause lasted MAX_RETRY_AFTER_MS (10 s), not an hour.
    expect(Math.min(...after.map((post) => post.at)) - refusedAt).toBeGreaterThanOrEqual(9_900);
    expect(Math.min(...after.map((post) => post.at)) - refusedAt).toBeLessThan(15_000);
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(6);
    const jobs = await jobRows(service.databaseUrl, jobIds);
    expect(jobs.filter((job) => job.attempts === 2)).toHaveLength(1);
    expect(jobs.filter((job) => job.attempts > 2)).toEqual([]);
  }, 90_000);
});

describe('a slow supplier holds back only its own jobs', () => {
  let service: TestService;

  beforeAll(async () => {
    // Two consumers of eight: twenty slow calls would hold both for the length of a call.
    service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, WORKER_CONCURRENCY: '16' });
  });
  afterAll(() => service?.stop());

  it("lets its batches go while its calls run, so another reseller's order goes through; each job still completes once", async () => {
    const slow = await openTenant(service);
    const slowSupplier = await addSupplier(service, slow, { platform: 'custom', vendorTag: 'SlowCo' });
    sandbox.setFaults(slowSupplier.shopDomain, { latencyMs: 5_000 });
    const quiet = await openTenant(service);
    const quietSupplier = await addSupplier(service, quiet, { platform: 'custom', vendorTag: 'QuickCo' });

    const slowJobs = await postOrders(service, slow, slowSupplier.vendorTag, 20);
    await waitFor(
      async () => (await jobRows(service.databaseUrl, slowJobs)).filter((job) => job.status === 'processing').length >= 4,
      10_000,
      'the slow calls under way',
    );
    const latency = await latencyToSupplier(service, quiet, quietSupplier);
    expect(latency).toBeLessThan(3_500);
    expect(sandbox.ordersFor(slowSupplier.shopDomain).length, 'the slow calls were still running').toBeLessThan(20);
    // Meanwhile each row let go of names a watchdog message that would take it again after any attempt
    // must have ended, should this process die before recording the outcome.
    const guarded = await queryRows<{ wait_s: number }>(
      service.databaseUrl,
      `select extract(epoch from m.start_after - now())::float8 as wait_s from sync_jobs j join pgboss.job m on m.id::text = j.queue_message_id
        where j.id = any($1::text[]) and j.status = 'processing' and m.state = 'created'`,
      [slowJobs],
    );
    expect(guarded.length).toBeGreaterThan(0);
    for (const { wait_s } of guarded) expect(wait_s).toBeGreaterThan(30);

    await allCompleted(service.databaseUrl, slowJobs, 30_000);
    // Each let-go attempt recorded its outcome itself: one call, one order and one attempt per job.
    expect(sandbox.ordersFor(slowSupplier.shopDomain)).toHaveLength(20);
    expect(orderPosts(sandbox, slowSupplier.shopDomain)).toHaveLength(20);
    expect((await jobRows(service.databaseUrl, slowJobs)).filter((job) => job.attempts !== 1)).toEqual([]);
    const letGo = (await service.ctx.metrics.attemptsLetGo.get()).values.reduce((sum, value) => sum + value.value, 0);
    expect(letGo).toBeGreaterThan(0);
    // Each watchdog message went with its attempt's outcome: no message is left that could move these jobs.
    const open = await queryRows(
      service.databaseUrl,
      `select id from pgboss.job where name = 'sync-job.process' and state <> 'completed' and data->>'syncJobId' = any($1::text[])`,
      [slowJobs],
    );
    expect(open).toEqual([]);
  }, 90_000);
});

describe('the watchdog of an attempt still running', () => {
  let service: TestService;

  beforeAll(async () => {
    // Calls may last 30 s: the held call below is let go of, and runs until the test releases it.
    service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, PLATFORM_TIMEOUT_MS: '30000' });
  });
  afterAll(() => service?.stop());

  it('is put off while its process runs the attempt, so a long attempt is never taken again as lost', async () => {
    const tenant = await openTenant(service);
    const supplier = await addSupplier(service, tenant, { platform: 'custom', vendorTag: 'HeldCo' });
    sandbox.setFaults(supplier.shopDomain, { holdRequestsNext: 1 });
    const [jobId] = await postOrders(service, tenant, supplier.vendorTag, 1);
    const watchdogOf = async () =>
      (await queryRows<{ id: string; wait_s: number }>(
        service.databaseUrl,
        `select m.id::text as id, extract(epoch from m.start_after - now())::float8 as wait_s from sync_jobs j
          join pgboss.job m on m.id::text = j.queue_message_id where j.id = $1 and m.state = 'created'`,
        [jobId],
      ))[0];
    // Let go of by its batch: its row names a watchdog that starts after any attempt must have ended.
    const watchdog = await waitFor(async () => {
      const message = await watchdogOf();
      return message !== undefined && message.wait_s > 30 ? message : null;
    }, 10_000, 'the attempt let go of');
    expect(sandbox.heldRequestCount(supplier.shopDomain)).toBe(1);
    // As if its calls had waited for turns longer than that delay: 20 s left. The process puts it off again.
    await queryRows(service.databaseUrl, "update pgboss.job set start_after = now() + interval '20 seconds' where id = $1::uuid", [watchdog.id]);
    await waitFor(async () => ((await watchdogOf())?.wait_s ?? 0) > 60, 25_000, 'the watchdog put off');
    expect(sandbox.releaseRequests(supplier.shopDomain)).toBe(1);
    await allCompleted(service.databaseUrl, [jobId!], 15_000);
    expect((await jobRows(service.databaseUrl, [jobId!]))[0]).toMatchObject({ status: 'completed', attempts: 1 });
    expect(orderPosts(sandbox, supplier.shopDomain)).toHaveLength(1);
  }, 60_000);
});

describe('an attempt that makes several calls to one store', () => {
  let service: TestService;

  beforeAll(async () => {
    // platform_b takes one tracking number per call: a reseller store paced at 2 calls/s.
    service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, PLATFORM_PACING: 'platform_b=2:2' });
  });
  afterAll(() => service?.stop());

  it('waits for a turn per call, so a backlog of multi-parcel fulfillments spends no attempt on pacing', async () => {
    const tenant = await openTenant(service, 'platform_b');
    const { reseller } = tenant;
    const supplierSecret = `whsec_${randomBytes(12).toString('hex')}`;
    const supplier = await addSupplier(service, tenant, { platform: 'custom', vendorTag: 'ParcelCo', webhookSecret: supplierSecret });

    const jobIds = await postOrders(service, tenant, supplier.vendorTag, 12);
    await allCompleted(service.databaseUrl, jobIds, 20_000);

    // Each supplier order ships in two parcels: 24 calls to the reseller store, 12 s of its turns (and
    // more than the 5 s a call waits for its turn inline, were only the first call's turn reserved).
    const supplierOrders = sandbox.ordersFor(supplier.shopDomain);
    for (const [i, order] of supplierOrders.entries()) {
      const payload = buildFulfillmentPayload('custom', { orderId: order.id, trackingNumbers: [1, 2].map((n) => `PARCEL-${i}-${n}`) });
      const answer = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: supplier.shopDomain, secret: supplierSecret, topic: 'fulfillments/create', payload });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    }
    const fulfillments = () =>
      queryRows<{ status: string; attempts: number }>(service.databaseUrl, 'select status, attempts from fulfillments where reseller_store_id = $1', [reseller.id]);
    await waitFor(async () => {
      const rows = await fulfillments();
      return rows.length === 12 && rows.every((row) => row.status === 'completed');
    }, 40_000, 'twelve completed fulfillments');
    expect((await fulfillments()).map((row) => row.attempts)).toEqual(Array(12).fill(1));
    expect(sandbox.fulfillmentsFor(reseller.shopDomain)).toHaveLength(24);
  }, 90_000);
});
