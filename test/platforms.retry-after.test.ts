/**
 * A platform's Retry-After is honoured up to MAX_RETRY_AFTER_MS whatever the status it came with
 * (README: "Retry-After honoured up to MAX_RETRY_AFTER_MS"). A 503 "down for maintenance" asking
 * for a year must not park the job for a year: it stays `failed` with a live message, so the sweep
 * never rescues it, and the reseller's order never reaches the supplier.
 */
import { expect } from 'vitest';
import { test as it } from './support/fixtures.ts';
import { addSupplier, createJob, lineOf, openShop, orderPosts, seedResellerOrder, waitForJob } from './support/sync-jobs.ts';

const MAX_RETRY_AFTER_MS = 2_000;
const A_YEAR_S = 365 * 24 * 60 * 60;

it.override('serviceEnv', { MAX_RETRY_AFTER_MS: String(MAX_RETRY_AFTER_MS) });

it.for(['custom', 'platform_a', 'platform_b'] as const)('%s: a 503 whose Retry-After asks for a year is retried after MAX_RETRY_AFTER_MS at most, and the job completes', async (platform, { api, sandbox }) => {
  const shop = await openShop(api);
  const supplier = await addSupplier(api, shop, { vendorTag: 'Maintenance', platform });
  sandbox.setFaults(supplier.shopDomain, { failNext: 1, status: 503, failRetryAfterSeconds: A_YEAR_S });
  const orderId = seedResellerOrder(sandbox, shop, [lineOf('Maintenance')]);

  const job = await createJob(api, shop.user.token, supplier.id, orderId);
  const failed = await waitForJob(api, shop.user.token, job.id, (current) => current.status !== 'pending' && current.status !== 'processing');
  if (failed.status === 'failed') {
    // The next attempt is due within the cap, not in a year.
    expect(Date.parse(failed.nextRetryAt) - Date.now()).toBeLessThanOrEqual(MAX_RETRY_AFTER_MS + 1_000);
  }
  const done = await waitForJob(api, shop.user.token, job.id, (current) => current.status === 'completed', 15_000);
  expect(done.attempts).toBe(2);
  expect(orderPosts(sandbox, supplier.shopDomain).map((post) => post.status)).toEqual([503, 201]);
});
