/**
 * The `sync_job.stale` event's `data.object` is the sync job exactly as its GET returns it
 * (events.md), with its fulfillments: a job is stale with a shipment recorded `skipped` (no tracking
 * number for a custom storefront: nothing reached the customer), and that fulfillment is part of the job.
 */
import { expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { check, deliverFulfillment, eventsOf, fulfillmentsOf, openTenant, placeOrder, type Target } from './support/watch.ts';

test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

it("sync_job.stale of a job whose only shipment was skipped carries that fulfillment, as the job's GET shows it", async ({ sandbox, target }) => {
  const tenant = await openTenant(sandbox, target, 'custom', ['custom']);
  const supplier = tenant.suppliers[0]!;
  const placed = await placeOrder(sandbox, tenant, supplier);
  const [body] = sandbox.shipOrder(supplier.shopDomain, 'custom', placed.sourceOrderId, { trackingNumbers: [], trackingUrls: ['https://courier.example/parcel/1'] });
  expect((await deliverFulfillment(tenant, supplier, body!)).status).toBe(200);
  await waitFor(async () => (await fulfillmentsOf(tenant, placed.jobId))[0]?.status === 'skipped', 20_000, 'the shipment skipped');

  await queryRows(target.databaseUrl, "update sync_jobs set completed_at = now() - interval '8 days' where id = $1", [placed.jobId]);
  expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
  const [event, ...more] = await eventsOf(tenant, 'sync_job.stale');
  expect(more).toEqual([]);
  const job = (await target.api.get(`/v1/sync_jobs/${placed.jobId}`, { token: tenant.user.token })).body;
  expect(job.fulfillments).toHaveLength(1);
  const { request_id: _requestId, ...shown } = job;
  expect(event!.object).toEqual(shown);
});
