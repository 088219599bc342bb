/**
 * Rate-limit pauses that spend no attempt (issue 13, point 3): a 429 pauses the store for every
 * process for its (bounded) Retry-After while the jobs not yet sent wait without spending attempts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from './sandbox/server.ts';
import { addSupplier, allCompleted, flowControlKit, jobRows, openTenant } from './support/flow-control.ts';
import { startTestService, type TestService } from './support/service.ts';
import { orderPosts, settled, waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox?.close());
const { postOrders } = flowControlKit(() => sandbox);

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
