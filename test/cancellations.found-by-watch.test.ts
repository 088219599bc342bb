/**
 * A cancellation of a job in doubt whose lookup by reference stops at its page bound (a flash sale's
 * backlog on the supplier) fails at every retry and dies: the reseller is told `cancellation_dead`.
 * The divergence watch lists that supplier order (its reference names the job) but only held its
 * shipments: the job still had no order id, so the reseller's retry of the cancellation looked it
 * up again, stopped at the bound again, and died again while the supplier shipped the cancelled
 * order. The watch now records the order it found on the job ended unplaced (audit
 * `sync_job.order_found`), and the retry cancels that order.
 *
 * Recorded so, the order was still left to a retry by hand: nothing cancelled it unless the reseller
 * retried the dead cancellation (its to-do entry said nothing of the order found), and the job was
 * later flagged `stale`, "Placed" at the time it was ended unplaced. The order found now re-opens the
 * dead cancellation for fresh automatic retries (audit and event `cancellation.retried`, by the
 * service, naming the order and the pass), which cancel it.
 */
import { expect } from 'vitest';
import { ANVIL, createAcmeShop, placeWithAnswerLost, seedBacklog, sendStorefrontWebhook } from './support/cancellations.ts';
import { test as it } from './support/fixtures.ts';
import { queryRows } from './support/database.ts';
import { auditOf, waitForJob } from './support/sync-jobs.ts';
import { check, finishedPass, type Tenant } from './support/watch.ts';

// Passes run only when asked; failures are retried fast.
it.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500', DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0' });

/** custom lists 100 orders a page and the lookup looks through at most 20 full pages of orders. */
const BEYOND_THE_BOUND = 20 * 100 + 1;

it('the order a pass finds by the reference of a job whose cancellation died at the lookup bound is recorded on the job, and cancelled at the supplier without a retry by hand', async ({ api, sandbox, service }) => {
  const shop = await createAcmeShop(api, 'platform_a', 'custom');
  const { user, reseller, acme: supplier } = shop;
  const storefront = (topic: string, payload: unknown) => sendStorefrontWebhook(service.url, shop, topic, payload);

  // Every answer lost: the supplier holds the order, the job never learns it and dies.
  const order = sandbox.buildOrderPayload('platform_a', { id: 3_900_001 + Math.floor(Math.random() * 10_000), lines: [ANVIL] });
  const { jobId, held } = await placeWithAnswerLost(api, sandbox, service.url, shop, order);

  // The backlog: thousands of the supplier's orders created since the job, before the one it holds.
  seedBacklog(sandbox, supplier, held, BEYOND_THE_BOUND, { beforeMs: 20_000, stepMs: 1 });

  // The customer cancels; the cancellation's lookup stops at its bound at every try, and it dies.
  expect((await storefront('orders/cancelled', { ...order, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' })).status).toBe(200);
  const dead = await waitForJob(api, user.token, jobId, (current) => current.cancellations[0]?.status === 'dead', 30_000);
  expect(dead.cancellations[0].errorMessage).toContain('not looked further');
  expect(dead).toMatchObject({ status: 'completed', sourceOrderId: null });

  // A divergence-watch pass lists the supplier's order: its reference names the job.
  const asked = await api.post(`/v1/reseller_stores/${reseller.id}/divergence_checks`, { token: user.token });
  expect(asked.status, JSON.stringify(asked.body)).toBe(202);
  const pass = await finishedPass({ target: { api, url: service.url, databaseUrl: service.databaseUrl } } as never, asked.body.divergenceCheckId);
  expect(pass).toMatchObject({ status: 'succeeded', error: null });
  expect((await waitForJob(api, user.token, jobId, () => true)).sourceOrderId).toBe(String(held.id));
  expect((await auditOf(api, user.token, jobId)).filter((entry) => entry.action === 'sync_job.order_found')).toMatchObject([
    { metadata: { sourceOrderId: String(held.id), foundBy: expect.stringContaining('divergence watch'), watchPassId: pass.id } },
  ]);

  // Nobody retries by hand: the order found re-opens the dead cancellation, whose retries cancel it at the supplier.
  const done = await waitForJob(api, user.token, jobId, (current) => ['completed', 'dead'].includes(current.cancellations[0].status) && current.cancellations[0].attempts > dead.cancellations[0].attempts, 30_000, 're-opened cancellation of');
  expect(done.cancellations).toMatchObject([{ id: dead.cancellations[0].id, status: 'completed', outcome: 'cancelled' }]);
  expect(sandbox.orderOf(supplier.shopDomain, 'custom', held.id)?.status).toBe('cancelled');
  // The re-opening is audited and announced as a retry by the service, naming the order found and the pass.
  expect((await auditOf(api, user.token, dead.cancellations[0].id)).filter((entry) => entry.action === 'cancellation.retried')).toMatchObject([
    { actorId: 'system', metadata: { sourceOrderId: String(held.id), watchPassId: pass.id, reason: expect.stringContaining('found') } },
  ]);
  const events = await queryRows<{ type: string }>(service.databaseUrl, "select type from events where reseller_store_id = $1 and type = 'cancellation.retried'", [reseller.id]);
  expect(events).toHaveLength(1);
  // Nothing is left on the reseller's to-do list for it.
  const todo = (await api.get(`/v1/reseller_stores/${reseller.id}/divergences`, { token: user.token })).body.data;
  expect(todo.filter((entry: { syncJobId: string }) => entry.syncJobId === jobId)).toEqual([]);

  // Weeks later, no tracking: the order was cancelled, the job is not stale (it was never "Placed" when it was ended unplaced).
  await queryRows(service.databaseUrl, "update sync_jobs set completed_at = now() - interval '8 days' where id = $1", [jobId]);
  const tenant = { target: { api, url: service.url, databaseUrl: service.databaseUrl }, user, reseller: { ...reseller, secret: reseller.secret }, suppliers: [] } as unknown as Tenant;
  expect(await check(tenant)).toMatchObject({ status: 'succeeded' });
  const later = (await api.get(`/v1/reseller_stores/${reseller.id}/divergences`, { token: user.token })).body.data;
  expect(later.filter((entry: { syncJobId: string }) => entry.syncJobId === jobId)).toEqual([]);
}, 90_000);
