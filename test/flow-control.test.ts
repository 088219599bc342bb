/**
 * Flow control across processes and tenants (issue 15), against the sandbox's enforced
 * per-credential rate limit: one API and two worker processes share each store's allowance; one
 * tenant's backlog or bogus credential never slows another tenant's orders. The pauses of a 429
 * are in flow-control.retry-after, slow suppliers in flow-control.slow-supplier, attempts of several
 * calls in flow-control.multi-call (split so that the suite's workers share them).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { addSupplier, allCompleted, flowControlKit, jobRows, LIMIT, openTenant, PACING } from './support/flow-control.ts';
import { startTestProcess, startTestService, type TestProcess, type TestService } from './support/service.ts';
import { logLines, orderPosts } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox?.close());
const { postOrders, latencyToSupplier } = flowControlKit(() => sandbox);

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
