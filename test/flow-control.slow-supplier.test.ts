/**
 * A slow supplier holds back only its own jobs: a batch lets go of attempts still calling it, each
 * handed to a watchdog message that its process keeps putting off while the attempt runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { addSupplier, allCompleted, flowControlKit, jobRows, openTenant } from './support/flow-control.ts';
import { startTestService, type TestService } from './support/service.ts';
import { orderPosts } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox?.close());
const { postOrders, latencyToSupplier } = flowControlKit(() => sandbox);

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
