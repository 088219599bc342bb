/**
 * Review 2: divergence-watch passes of different reseller stores do not wait for each other. A pass
 * can take long (a busy or slow supplier: up to 2,000 pages, a platform_b shipment read per completed
 * order, 429 pauses), and the passes of other stores must still run: "one pass per store at a time"
 * (order-changes.md), not one slow store holding back the rest. A worker took its run messages in
 * batches and fetched no new one until the slowest pass of the batch had finished; with the default
 * WORKER_CONCURRENCY (64: eight batches of 8), eight slow stores stopped every other store's watch in
 * that process, and passes waiting more than 10 minutes were failed as abandoned.
 */
import { expect } from 'vitest';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { check, finishedPass, openTenant, requestCheck, type Target, type Tenant } from './support/watch.ts';

// Passes run only when asked. A slow platform call may take a minute before it times out.
test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', PLATFORM_TIMEOUT_MS: '60000' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

/** As many slow stores as a worker process has run loops with the default WORKER_CONCURRENCY (64, in batches of 8). */
const SLOW_STORES = 8;

it("a store's pass runs while other stores' passes are slow", async ({ sandbox, target }) => {
  const slow: Tenant[] = [];
  for (let i = 0; i < SLOW_STORES; i++) slow.push(await openTenant(sandbox, target, 'platform_a', ['custom']));
  const healthy = await openTenant(sandbox, target, 'platform_a', ['custom']);
  const slowPasses: string[] = [];
  try {
    // Each slow store's supplier answers its list only when the test lets it (a platform that is slow for as long as it takes).
    for (const tenant of slow) {
      const supplier = tenant.suppliers[0]!;
      sandbox.setFaults(supplier.shopDomain, { holdRequestsNext: 1 });
      slowPasses.push(await requestCheck(tenant));
      await waitFor(async () => sandbox.heldRequestCount(supplier.shopDomain) === 1, 15_000, 'the slow pass waiting on its supplier');
    }
    // Another reseller's pass, over stores that answer at once, finishes in well under a second alone.
    const id = await requestCheck(healthy);
    expect(await finishedPass(healthy, id, 20_000)).toMatchObject({ status: 'succeeded', error: null });
  } finally {
    for (const tenant of slow) sandbox.releaseRequests(tenant.suppliers[0]!.shopDomain);
  }
  for (const [i, id] of slowPasses.entries()) expect((await finishedPass(slow[i]!, id, 30_000)).status).toBe('succeeded');
  expect(await check(healthy)).toMatchObject({ status: 'succeeded' });
});
