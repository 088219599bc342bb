/**
 * Review 6: platform_b's lookup by reference (findOrderByReference: a cancellation in doubt, a late
 * job retry) reads its page count from X-WP-TotalPages. 484708a made a missing header read as "go on
 * until a short page", as listOrders reads it; but a header it cannot read (a proxy that sends it
 * twice merges it into `2, 2`; an empty value) was taken for a number: NaN or 0, which ends the
 * lookup after its first page with "not found". listOrders and the updated list refuse such a header
 * (a failed run); the lookup answered "never placed": a cancellation of an order whose creation
 * answer was lost ended `not_placed` while the supplier kept the order open, and shipped it.
 */
import { describe, expect, it } from 'vitest';
import { type JsonObject, buildOrderPayload } from './sandbox/server.ts';
import { adapterBench } from './support/adapters.ts';
import { ANVIL, createAcmeShop, placeWithAnswerLost, seedBacklog, sendStorefrontWebhook } from './support/cancellations.ts';
import { test } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';

const T0 = Date.parse('2026-11-20T08:00:00.000Z');

function platformBOrder(n: number, reference: string | null): JsonObject {
  const order = buildOrderPayload('platform_b', { id: n, lines: [{ sku: 'S', title: 'T', vendor: 'Acme', quantity: 1, price: '1.00' }], createdAt: new Date(T0 + n * 100).toISOString() });
  return reference === null ? order : { ...order, meta_data: [{ key: 'sync_reference', value: reference }] };
}

describe('platform_b lookup with paging totals it cannot read', () => {
  const bench = adapterBench({ name: 'r6-totals', timeoutMs: 10_000 });

  it('never answers "not found" after the first page when X-WP-TotalPages comes twice (merged: "2, 2")', async () => {
    const store = bench.newStore('platform_b');
    const { sandbox, adapters } = bench;
    sandbox.setFaults(store.shopDomain, { repeatListTotals: true });
    for (let n = 1; n <= 120; n++) sandbox.seedOrder(store.shopDomain, 'platform_b', platformBOrder(n, null));
    sandbox.seedOrder(store.shopDomain, 'platform_b', platformBOrder(121, 'sj_second_page'));

    const outcome = await adapters.platform_b.findOrderByReference(store, 'sj_second_page', new Date(T0), 'fail').then(
      (id) => id,
      (error: unknown) => error,
    );
    // Found, or a failure the caller retries and reports; never null while the order is there.
    if (outcome === null || typeof outcome === 'string') expect(outcome).toBe('121');
    else expect(outcome).toBeInstanceOf(Error);
  });

  it('the order list and the updated list refuse such totals: where the list ends is unknown, so the read fails rather than stopping early', async () => {
    const store = bench.newStore('platform_b');
    const { sandbox, adapters } = bench;
    sandbox.setFaults(store.shopDomain, { repeatListTotals: true });
    for (let n = 1; n <= 3; n++) sandbox.seedOrder(store.shopDomain, 'platform_b', platformBOrder(n, null));

    const listed = async () => {
      for await (const _page of adapters.platform_b.listOrders(store, new Date(T0 - 60_000)));
    };
    await expect(listed()).rejects.toThrow('invalid platform_b order list: X-WP-TotalPages: expected a number, got 1, 1');
    await expect(adapters.platform_b.listUpdatedOrders(store, new Date(T0 - 60_000), null)).rejects.toThrow(
      'invalid platform_b updated order list: X-WP-TotalPages: expected a number, got 1, 1',
    );
    // Without the fault, the same lists read through.
    sandbox.clearFaults(store.shopDomain);
    await listed();
    expect((await adapters.platform_b.listUpdatedOrders(store, new Date(T0 - 60_000), null)).orders).toHaveLength(3);
  });
});

const it6 = test;
it6.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });

it6('a cancellation in doubt on a platform_b supplier whose list totals come twice never ends not_placed while the supplier holds the order', async ({ api, sandbox, service }) => {
  const shop = await createAcmeShop(api, 'platform_a', 'platform_b');
  const { user, acme: supplier } = shop;
  const storefront = (topic: string, payload: unknown) => sendStorefrontWebhook(service.url, shop, topic, payload);

  // Every answer lost: the supplier holds the order, the job never learns it and dies.
  const order = sandbox.buildOrderPayload('platform_a', { id: 3_600_001 + Math.floor(Math.random() * 10_000), lines: [{ ...ANVIL, quantity: 1 }] });
  const { jobId, held } = await placeWithAnswerLost(api, sandbox, service.url, shop, order);

  // A busy supplier: more than a page of its orders created since the job, before the one it holds.
  seedBacklog(sandbox, supplier, held, 130, { beforeMs: 30_000, stepMs: 100 });
  // Behind a proxy that sends the paging totals twice.
  sandbox.setFaults(supplier.shopDomain, { repeatListTotals: true });

  const answer = await storefront('orders/cancelled', { ...order, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const job = await waitForJob(api, user.token, jobId, (current) => current.cancellations.length > 0 && ['completed', 'dead'].includes(current.cancellations[0].status), 30_000);
  // "Never placed" would be false: the supplier holds the order.
  expect(job.cancellations[0].outcome).not.toBe('not_placed');
  expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'cancelled' });
  expect(sandbox.orderOf(supplier.shopDomain, 'platform_b', held.id)?.status).toBe('cancelled');
}, 60_000);
