/**
 * A cancellation is not queued behind a backlog of placements (README "Flow control", the booking
 * horizon and the urgent lane). A flash sale to one rate-limited supplier books its turns up to the
 * horizon only; the rest of it waits in line with an estimate of its turn and books it when it comes
 * back. A cancellation of an order already placed at that supplier books the store's next real turn,
 * so it reaches the supplier within about the horizon, not after the whole backlog, while the supplier
 * could still ship. The backlog then completes as before: every order placed once, at the store's rate.
 */
import { expect } from 'vitest';
import { ANVIL, createShop, sendStorefrontWebhook, settled } from './support/cancellations.ts';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { newOrderId, orderPosts, waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

/** The supplier's own limit in the sandbox, and the service's pacing of platform_a stores: the same. */
const LIMIT = { perSecond: 5, burst: 10 };
/** Orders of the flash sale: at 5 a second, 20 s of the supplier's calls, twice the horizon. */
const BACKLOG = 100;
/** How far ahead ordinary work books its turns (src/pacing/pacer.ts BOOKING_HORIZON_MS). */
const HORIZON_MS = 10_000;

test.override('serviceEnv', { PLATFORM_PACING: `platform_a=${LIMIT.perSecond}:${LIMIT.burst}`, SYNC_RETRY_BASE_DELAY_MS: '300' });

test('a cancellation reaches a supplier with a long backlog of placements within the booking horizon, and the backlog still completes once each', async ({ service, api, sandbox }) => {
  const shop = await createShop(api, 'platform_a', 'platform_a');
  const { acme } = shop;
  sandbox.setFaults(acme.shopDomain, { rateLimit: LIMIT });
  const order = (id = Number(newOrderId())) => {
    const payload = sandbox.buildOrderPayload('platform_a', { id, lines: [ANVIL] }) as Record<string, unknown>;
    sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', payload);
    return payload;
  };
  const route = async (payload: Record<string, unknown>): Promise<string> => {
    const answer = await sendStorefrontWebhook(service.url, shop, 'orders/create', payload);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return (answer.body as { syncJobIds: string[] }).syncJobIds[0]!;
  };

  // An order placed at the supplier before the sale.
  const early = order();
  const earlyJobId = await route(early);
  const earlyJob = await waitForJob(api, shop.user.token, earlyJobId, (job) => job.status === 'completed', 15_000);

  // The flash sale: more orders than the supplier takes in 20 s, sent 25 at a time (the supplier's turns
  // start with the first job: sent 8 at a time on a loaded machine, the sale had drained before it was all in).
  const jobIds: string[] = [];
  for (let i = 0; i < BACKLOG; i += 25) jobIds.push(...(await Promise.all(Array.from({ length: Math.min(25, BACKLOG - i) }, () => route(order())))));
  expect(jobIds).toHaveLength(BACKLOG);
  // Let the workers book the sale's turns first.
  await waitFor(async () => orderPosts(sandbox, acme.shopDomain).length > 5, 10_000, 'the sale reaching the supplier');

  // The customer of the early order cancels it on the storefront.
  const cancelledAt = Date.now();
  expect((await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { ...early, cancelled_at: new Date().toISOString() })).status).toBe(200);
  const [cancellation] = await waitFor(async () => {
    const done = sandbox.cancellationsFor(acme.shopDomain);
    return done.length > 0 ? done : null;
  }, 60_000, 'the cancellation at the supplier');
  const waitedMs = Date.parse(cancellation!.at) - cancelledAt;
  const placedMeanwhile = sandbox.ordersFor(acme.shopDomain).filter((placed) => Date.parse(placed.createdAt) <= Date.parse(cancellation!.at)).length - 1;
  expect(cancellation!.orderId).toBe(earlyJob.sourceOrderId);
  expect(placedMeanwhile, 'the sale was still draining when the cancellation arrived').toBeLessThan(BACKLOG - 10);
  // Behind the whole sale it would have waited about BACKLOG / 5 = 20 s.
  expect(waitedMs, `the cancellation reached the supplier after ${waitedMs} ms`).toBeLessThan(HORIZON_MS + 4_000);
  const cancelledJob = await waitForJob(api, shop.user.token, earlyJobId, settled, 15_000);
  expect(cancelledJob.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled' }]);

  // The sale completes: every order placed once, at the supplier's rate, barely refused.
  await waitFor(
    async () => {
      const rows = await queryRows<{ status: string }>(service.databaseUrl, 'select status from sync_jobs where id = any($1::text[])', [jobIds]);
      return rows.every((row) => row.status === 'completed');
    },
    60_000,
    `${BACKLOG} completed jobs`,
  );
  const placed = sandbox.ordersFor(acme.shopDomain);
  expect(placed).toHaveLength(BACKLOG + 1);
  expect(new Set(placed.map((supplierOrder) => supplierOrder.idempotencyKey)).size).toBe(BACKLOG + 1);
  const refused = sandbox.requestsFor(acme.shopDomain).filter((request) => request.status === 429);
  expect(refused.length, 'answers 429').toBeLessThanOrEqual(5);
}, 120_000);
