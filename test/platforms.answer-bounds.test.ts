/**
 * A platform answering with a huge body (a hostile supplier, a broken reseller platform) costs the
 * service no more than the bound on one answer: the body is read up to 1 MiB (a list page up to
 * 8 MiB) and the connection closed, the call fails cleanly, and the process's memory and every
 * other tenant's API stay as they were. The sandbox streams the body, so it allocates nothing itself.
 *
 * The memory and /healthz figures are bounds asserted while the hostile answer is being sent, not
 * speed: peak resident memory grows by less than 100 MB (reading the 300 MB body grew it by more
 * than a gigabyte) and /healthz answers within a second (it took 9-15 s).
 */
import { expect } from 'vitest';
import { ANSWER_MAX_BYTES } from '../src/platforms/http.ts';
import { test as it } from './support/fixtures.ts';
import { finishedRun, openReseller, reconcile } from './support/reconciliation.ts';
import { addSupplier, createJob, lineOf, openShop, orderPosts, seedResellerOrder, waitForJob } from './support/sync-jobs.ts';

const HOSTILE_BYTES = 300 * 1024 * 1024;
const MB = 1024 * 1024;

it.override('serviceEnv', { RECONCILE_INTERVAL_MS: '0', RECONCILE_GRACE_MS: '0' });

/** Samples resident memory and /healthz's latency until `done` settles; returns the worst of each. */
async function watchWhile<T>(url: string, done: Promise<T>): Promise<{ result: T; rssGrowthMb: number; slowestHealthzMs: number }> {
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  let slowest = 0;
  let finished = false;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const prober = (async () => {
    while (!finished) {
      const started = performance.now();
      const response = await fetch(`${url}/healthz`);
      await response.arrayBuffer();
      slowest = Math.max(slowest, performance.now() - started);
    }
  })();
  try {
    const result = await done;
    return { result, rssGrowthMb: (peak - baseline) / MB, slowestHealthzMs: slowest };
  } finally {
    finished = true;
    clearInterval(sampler);
    await prober;
  }
}

it('a supplier answering its order POST with 300 MB: the job fails cleanly, memory and /healthz stay bounded', async ({ api, sandbox, service }) => {
  const shop = await openShop(api);
  const supplier = await addSupplier(api, shop, { vendorTag: 'Hoarder', platform: 'custom' });
  sandbox.setFaults(supplier.shopDomain, { oversizedBodyNext: 10, oversizedBodyBytes: HOSTILE_BYTES, oversizedBodyStatus: 201 });
  const orderId = seedResellerOrder(sandbox, shop, [lineOf('Hoarder')]);

  const job = await createJob(api, shop.user.token, supplier.id, orderId);
  const watched = await watchWhile(service.url, waitForJob(api, shop.user.token, job.id, (candidate) => candidate.status === 'dead', 30_000));

  expect(watched.rssGrowthMb).toBeLessThan(100);
  expect(watched.slowestHealthzMs).toBeLessThan(1000);
  // Each of the four attempts (the automatic retries send the same Idempotency-Key, which a sane
  // platform answers with the order it made) read 1 MiB and hung up; then the job is dead.
  expect(orderPosts(sandbox, supplier.shopDomain).map((post) => post.status)).toEqual([201, 201, 201, 201]);
  expect(watched.result.errorMessage).toContain(`answered 201 with a body over ${ANSWER_MAX_BYTES} bytes`);
});

it('an oversized error body is cut to its start: the failure keeps its status and is retried as that status says', async ({ api, sandbox }) => {
  const shop = await openShop(api);
  const supplier = await addSupplier(api, shop, { vendorTag: 'Shouter', platform: 'custom' });
  sandbox.setFaults(supplier.shopDomain, { oversizedBodyNext: 1, oversizedBodyBytes: HOSTILE_BYTES, oversizedBodyStatus: 503 });
  const orderId = seedResellerOrder(sandbox, shop, [lineOf('Shouter')]);

  const job = await createJob(api, shop.user.token, supplier.id, orderId);
  const done = await waitForJob(api, shop.user.token, job.id, (candidate) => candidate.status === 'completed', 30_000);

  expect(done.attempts).toBe(2);
  expect(orderPosts(sandbox, supplier.shopDomain).map((post) => post.status)).toEqual([503, 201]);
});

it('a reconciliation page of 300 MB at every size: the run fails with the bound named, memory and /healthz stay bounded', async ({ sandbox, service }) => {
  const reseller = await openReseller(sandbox, { api: service.api, url: service.url, databaseUrl: service.databaseUrl }, 'platform_a');
  // The page is read again with fewer orders (250, 125, … 1: src/platforms/listing.ts readShrinking); each answer is 300 MB.
  sandbox.setFaults(reseller.store.shopDomain, { oversizedBodyNext: 8, oversizedBodyBytes: HOSTILE_BYTES });

  const id = await reconcile(reseller);
  const watched = await watchWhile(service.url, finishedRun(reseller, id, 30_000));

  // Eight reads of at most 8 MiB each, each kept until the collector frees it (84-88 MB of growth
  // measured; 120-150 MB while each oversized answer was also joined and decoded whole): bounded,
  // where one answer read whole would be 300 MB.
  expect(watched.rssGrowthMb).toBeLessThan(120);
  expect(watched.slowestHealthzMs).toBeLessThan(1000);
  expect(watched.result.status).toBe('failed');
  expect(JSON.stringify(watched.result)).toContain(`limit=1 answered 200 with a body over ${8 * MB} bytes`);
  expect(sandbox.requestsFor(reseller.store.shopDomain)).toHaveLength(8);
});
