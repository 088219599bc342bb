/**
 * A cancellation of a job in doubt (its attempts' answers were lost, the supplier holds the order)
 * looks the order up by its reference among the supplier's orders created since the job. On a busy
 * supplier (a flash sale's backlog put thousands of orders before it) the lookup stops at its page
 * bound: that is no proof the order was never placed, and ending `not_placed` let the supplier ship
 * a cancelled order with nobody told. The cancellation must fail instead (dead, on the reseller's
 * to-do list), never `not_placed` while the order is there.
 */
import { expect } from 'vitest';
import { ANVIL, createAcmeShop, placeWithAnswerLost, seedBacklog, sendStorefrontWebhook } from './support/cancellations.ts';
import { test as it } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';

it.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });

/** custom lists 100 orders a page and the lookup looks through at most 20 full pages of orders. */
const BEYOND_THE_BOUND = 20 * 100 + 1;

it('a cancellation whose lookup stops at its page bound never ends not_placed while the supplier holds the order', async ({ api, sandbox, service }) => {
  const shop = await createAcmeShop(api, 'platform_a', 'custom');
  const { user, reseller, acme: supplier } = shop;
  const storefront = (topic: string, payload: unknown) => sendStorefrontWebhook(service.url, shop, topic, payload);

  // Every answer lost: the supplier holds the order, the job never learns it and dies.
  const order = sandbox.buildOrderPayload('platform_a', { id: 2_900_001 + Math.floor(Math.random() * 10_000), lines: [ANVIL] });
  const { jobId, held } = await placeWithAnswerLost(api, sandbox, service.url, shop, order);

  // The backlog: thousands of the supplier's orders created since the job, before the one it holds.
  seedBacklog(sandbox, supplier, held, BEYOND_THE_BOUND, { beforeMs: 20_000, stepMs: 1 });

  const answer = await storefront('orders/cancelled', { ...order, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const job = await waitForJob(api, user.token, jobId, (current) => current.cancellations.length > 0 && ['completed', 'dead'].includes(current.cancellations[0].status), 30_000);
  // The order is open on the supplier: "never placed" would be false, and it would ship.
  expect(sandbox.orderOf(supplier.shopDomain, 'custom', held.id)?.status).toBe('open');
  expect(job.cancellations[0].outcome).not.toBe('not_placed');
  expect(job.cancellations[0]).toMatchObject({ status: 'dead' });
  expect(job.cancellations[0].errorMessage).toContain('not looked further');
  // The reseller is told.
  const todo = (await api.get(`/v1/reseller_stores/${reseller.id}/divergences`, { token: user.token })).body.data;
  expect(todo).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'cancellation_dead', syncJobId: jobId })]));
}, 60_000);
