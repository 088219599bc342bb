/**
 * `stale` says a placed job has had no tracking for STALE_AFTER_MS: an order the supplier should
 * have shipped. A job whose whole storefront order the customer cancelled, whose cancellation is
 * still being made or died (the supplier refused it until the retries ran out: `cancellation_dead`
 * on the reseller's to-do list), is not waiting for tracking: it waits for that cancellation. It was
 * flagged stale all the same, a second entry that told the reseller to chase a shipment the customer
 * no longer wants. It is not flagged while its whole-order cancellation is unfinished or dead. A job
 * ended unplaced by its whole-order cancellation whose order was found since (its cancel refused:
 * too_late) is stale all the same, its detail saying when it was ended unplaced, not "Placed".
 */
import { expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { ANVIL, createShop, placeWithAnswerLost, sendStorefrontWebhook } from './support/cancellations.ts';
import { test } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { check, type Tenant } from './support/watch.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500', RECONCILE_INTERVAL_MS: '0', DIVERGENCE_INTERVAL_MS: '0' });
const it = test;

let nextOrderId = 5_570_000 + Math.floor(Math.random() * 10_000) * 10;

it('a placed job whose whole-order cancellation died is not stale, however long it has had no tracking: its to-do entry is cancellation_dead', async ({ api, sandbox, service }) => {
  const shop = await createShop(api, 'custom', 'custom');
  const order = sandbox.buildOrderPayload('custom', { id: `sc-${nextOrderId++}`, lines: [{ ...ANVIL, quantity: 1 }] });
  sandbox.seedOrder(shop.reseller.shopDomain, 'custom', order);
  const routed = await sendStorefrontWebhook(service.url, shop, 'orders/create', order);
  const jobId = (routed.body as { syncJobIds: string[] }).syncJobIds[0]!;
  const placed = await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'completed');
  expect(placed.sourceOrderId).not.toBeNull();

  // The supplier refuses every cancellation request: the cancellation dies.
  sandbox.setFaults(shop.acme.shopDomain, { alwaysFail: true, status: 500 });
  await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
  await waitForJob(api, shop.user.token, jobId, (job) => job.cancellations[0]?.status === 'dead', 30_000);
  sandbox.clearFaults(shop.acme.shopDomain);

  // Eight days on, no tracking.
  await queryRows(service.databaseUrl, "update sync_jobs set completed_at = now() - interval '8 days' where id = $1", [jobId]);
  const tenant = { target: { api, url: service.url, databaseUrl: service.databaseUrl }, user: shop.user, reseller: { ...shop.reseller, secret: shop.reseller.secret }, suppliers: [] } as unknown as Tenant;
  expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
  const todo = (await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data;
  expect(todo.map((entry: { type: string; syncJobId: string }) => ({ type: entry.type, syncJobId: entry.syncJobId }))).toEqual([{ type: 'cancellation_dead', syncJobId: jobId }]);
  const stale = await queryRows(service.databaseUrl, "select 1 from audit_entries where resource_id = $1 and action = 'sync_job.stale'", [jobId]);
  expect(stale).toEqual([]);
}, 90_000);

it('a job ended unplaced by its whole-order cancellation, whose supplier order was found since, is stale with no tracking: its detail says when it was ended unplaced, not placed', async ({ api, sandbox, service }) => {
  const shop = await createShop(api, 'custom', 'custom');
  const order = sandbox.buildOrderPayload('custom', { id: `su-${nextOrderId++}`, lines: [{ ...ANVIL, quantity: 1 }] });
  // Every answer lost: the supplier holds the order, the job never learns it and dies.
  const { jobId, held } = await placeWithAnswerLost(api, sandbox, service.url, shop, order);
  const sourceOrderId = String(held.id);
  // The customer cancels: the job is ended unplaced, its cancellation's lookup finds the order (recorded on the job), and the
  // supplier refuses to cancel it (custom's 409: fulfilled quantities it does not show): too_late, and no tracking ever comes.
  sandbox.setFaults(shop.acme.shopDomain, { cancelFailNext: 1, cancelStatus: 409 });
  await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
  const ended = await waitForJob(api, shop.user.token, jobId, (job) => job.cancellations[0]?.status === 'completed', 30_000);
  sandbox.clearFaults(shop.acme.shopDomain);
  expect(ended).toMatchObject({ status: 'completed', sourceOrderId, fulfillments: [], cancellations: [{ scope: 'order', outcome: 'too_late' }] });

  // Eight days on (the cancellation came before the job was ended), no tracking.
  await queryRows(service.databaseUrl, "update sync_jobs set completed_at = now() - interval '8 days' where id = $1", [jobId]);
  await queryRows(service.databaseUrl, "update cancellations set created_at = now() - interval '8 days 1 minute' where sync_job_id = $1", [jobId]);
  const completedAt = (await queryRows<{ completed_at: Date }>(service.databaseUrl, 'select completed_at from sync_jobs where id = $1', [jobId]))[0]!.completed_at;
  const tenant = { target: { api, url: service.url, databaseUrl: service.databaseUrl }, user: shop.user, reseller: { ...shop.reseller, secret: shop.reseller.secret }, suppliers: [] } as unknown as Tenant;
  expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
  const todo = (await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data as { type: string; syncJobId: string; detail: string }[];
  const at = new Date(completedAt).toISOString().slice(0, 16).replace('T', ' ');
  expect(todo.filter((entry) => entry.type === 'stale')).toEqual([
    expect.objectContaining({
      syncJobId: jobId,
      detail: `Ended unplaced ${at} UTC when its order was cancelled; its supplier order ${sourceOrderId} was found since; no tracking since.`,
    }),
  ]);
}, 90_000);
