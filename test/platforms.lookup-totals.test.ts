/**
 * Review 6: platform_b's lookup by reference (findOrderByReference: a cancellation in doubt, a late
 * job retry) reads its page count from X-WP-TotalPages. 484708a made a missing header read as "go on
 * until a short page", as listOrders reads it; but a header it cannot read (a proxy that sends it
 * twice merges it into `2, 2`; an empty value) was taken for a number: NaN or 0, which ends the
 * lookup after its first page with "not found". listOrders and the updated list refuse such a header
 * (a failed run); the lookup answered "never placed": a cancellation of an order whose creation
 * answer was lost ended `not_placed` while the supplier kept the order open, and shipped it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PlatformAdapter, type StoreConnection, createPlatformAdapters } from '../src/platforms/index.ts';
import type { Platform } from '../src/orders/types.ts';
import { type JsonObject, type Sandbox, buildOrderPayload, sendWebhook, startSandbox } from './sandbox/server.ts';
import { startTestPacing } from './support/pacer.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';

const T0 = Date.parse('2026-11-20T08:00:00.000Z');

function platformBOrder(n: number, reference: string | null): JsonObject {
  const order = buildOrderPayload('platform_b', { id: n, lines: [{ sku: 'S', title: 'T', vendor: 'Acme', quantity: 1, price: '1.00' }], createdAt: new Date(T0 + n * 100).toISOString() });
  return reference === null ? order : { ...order, meta_data: [{ key: 'sync_reference', value: reference }] };
}

describe('platform_b lookup with paging totals it cannot read', () => {
  let sandbox: Sandbox;
  let pacing: Awaited<ReturnType<typeof startTestPacing>>;
  let adapters: Record<Platform, PlatformAdapter>;

  beforeAll(async () => {
    sandbox = await startSandbox();
    pacing = await startTestPacing();
    adapters = createPlatformAdapters({ baseUrlTemplate: sandbox.baseUrlTemplate, timeoutMs: 10_000, maxInlineRetryAfterMs: 1_500, pacer: pacing.pacer() });
  });
  afterAll(async () => {
    await pacing.close();
    await sandbox.close();
  });

  it('never answers "not found" after the first page when X-WP-TotalPages comes twice (merged: "2, 2")', async () => {
    const store: StoreConnection = { storeId: 'r6_totals', platform: 'platform_b', shopDomain: 'r6-totals.example', accessToken: 'tok_r6_totals' };
    sandbox.registerStore(store.shopDomain, { accessToken: store.accessToken });
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
    const store: StoreConnection = { storeId: 'r6_totals_lists', platform: 'platform_b', shopDomain: 'r6-totals-lists.example', accessToken: 'tok_r6_totals_lists' };
    sandbox.registerStore(store.shopDomain, { accessToken: store.accessToken });
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
  const user = await registerUser(api);
  const resellerSecret = `whsec_reseller_${uniqueSuffix()}`;
  const reseller = await createResellerStore(api, user.token, { platform: 'platform_a', webhookSecret: resellerSecret });
  const supplier = await createSourceStore(api, user.token, reseller.id, { platform: 'platform_b', vendorTag: 'Acme', webhookSecret: `whsec_supplier_${uniqueSuffix()}` });
  const storefront = (topic: string, payload: unknown) =>
    sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: reseller.shopDomain, secret: resellerSecret, topic, payload });

  // Every answer lost: the supplier holds the order, the job never learns it and dies.
  sandbox.setFaults(supplier.shopDomain, { acceptThenDropNext: 4 });
  const order = sandbox.buildOrderPayload('platform_a', { id: 3_600_001 + Math.floor(Math.random() * 10_000), lines: [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 1, price: '25.00' }] });
  sandbox.seedOrder(reseller.shopDomain, 'platform_a', order);
  const routed = await storefront('orders/create', order);
  const jobId = (routed.body as { syncJobIds: string[] }).syncJobIds[0]!;
  await waitForJob(api, user.token, jobId, (job) => job.status === 'dead', 20_000);
  sandbox.clearFaults(supplier.shopDomain);
  const [held] = sandbox.ordersFor(supplier.shopDomain);
  expect(held).toBeDefined();

  // A busy supplier: more than a page of its orders created since the job, before the one it holds.
  const heldAt = Date.parse(held!.createdAt);
  for (let n = 0; n < 130; n++) {
    sandbox.seedOrder(supplier.shopDomain, 'platform_b', sandbox.buildOrderPayload('platform_b', {
      id: 7_000_000 + n,
      lines: [{ sku: 'B-1', title: 'Other', vendor: 'Acme', quantity: 1, price: '1.00' }],
      createdAt: new Date(heldAt - 30_000 + n * 100).toISOString(),
    }));
  }
  // Behind a proxy that sends the paging totals twice.
  sandbox.setFaults(supplier.shopDomain, { repeatListTotals: true });

  const answer = await storefront('orders/cancelled', { ...order, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const job = await waitForJob(api, user.token, jobId, (current) => current.cancellations.length > 0 && ['completed', 'dead'].includes(current.cancellations[0].status), 30_000);
  // "Never placed" would be false: the supplier holds the order.
  expect(job.cancellations[0].outcome).not.toBe('not_placed');
  expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'cancelled' });
  expect(sandbox.orderOf(supplier.shopDomain, 'platform_b', held!.id)?.status).toBe('cancelled');
}, 60_000);
