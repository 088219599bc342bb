/**
 * Reconciliation of missed order webhooks, end to end on the real queue, database and sandbox:
 * the sandbox's stores post (or lose, or hold back) their orders/create webhooks, and runs list
 * the stores' orders through each platform's paging.
 */
import { afterAll, describe, expect } from 'vitest';
import { PLATFORMS } from '../src/orders/types.ts';
import { allowanceKeyOf } from '../src/attempts/store-connection.ts';
import { sendWebhook } from './sandbox/server.ts';
import { expectError } from './support/assertions.ts';
import { queryRows } from './support/database.ts';
import { registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import {
  auditEntries,
  finishedRun,
  idOf,
  jobsByOrder,
  listCalls,
  openReseller,
  orderOf,
  placeOrders,
  reconcile,
  routedOrders,
  runsOf,
  supplierOrders,
  watermarkOf,
  type Reseller,
  type Target,
} from './support/reconciliation.ts';
import { startTestService, type TestService } from './support/service.ts';
import { ORDERS_PATH } from './support/webhooks.ts';
import { waitFor } from './support/wait.ts';

// Runs only when asked (no schedule), and every order is old enough at once (no grace period).
test.override('serviceEnv', { RECONCILE_INTERVAL_MS: '0', RECONCILE_GRACE_MS: '0' });
/** The file's service, as the reconciliation helpers reach it. */
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

async function ownerOf(service: TestService, reseller: Reseller): Promise<string> {
  const [row] = await queryRows<{ owner_id: string }>(service.databaseUrl, 'select owner_id from reseller_stores where id = $1', [reseller.store.id]);
  return row!.owner_id;
}

/** Every order has exactly one job (one supplier matches each), and no job is for another order. */
async function expectRoutedOnce(reseller: Reseller, orderIds: string[]) {
  const jobs = await jobsByOrder(reseller);
  expect([...jobs.keys()].sort()).toEqual([...orderIds].sort());
  for (const id of orderIds) expect(jobs.get(id), `jobs of order ${id}`).toHaveLength(1);
  return jobs;
}

describe.each(PLATFORMS)('%s reseller store', (platform) => {
  it('an order whose webhook was lost is routed once by the next run, as its webhook would have routed it', async ({ service, sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const [delivered] = await placeOrders(sandbox, reseller, 1, 'deliver');
    const [lost] = await placeOrders(sandbox, reseller, 1, 'drop');
    await supplierOrders(sandbox, reseller, 1);

    const id = await reconcile(reseller);
    const run = await finishedRun(reseller, id);
    expect(run).toMatchObject({ status: 'succeeded', trigger: 'manual', ordersSeen: 2, ordersRouted: 1, error: null });
    const jobs = await expectRoutedOnce(reseller, [idOf(delivered!), idOf(lost!)]);

    // Same pricing: the supplier receives the same priced lines for both orders (not the reseller's 20.00).
    const [viaWebhook, viaReconciliation] = await supplierOrders(sandbox, reseller, 2);
    expect((viaReconciliation!.body as any).lines).toEqual((viaWebhook!.body as any).lines);
    expect((viaReconciliation!.body as any).lines[0].unitPrice).not.toBe('20.00');
    // Same audit, plus order.reconciled for the order reconciliation routed.
    const created = await auditEntries(reseller, 'sync_job.created');
    expect(created.map((entry) => entry.metadata.origin)).toEqual(['webhook', 'reconciliation']);
    expect(created[1]!.metadata).toMatchObject({ reconciliationId: id, externalOrderId: idOf(lost!) });
    const reconciled = await auditEntries(reseller, 'order.reconciled');
    expect(reconciled).toEqual([{ resource_id: idOf(lost!), metadata: { reconciliationId: id, sourceStoreIds: [reseller.supplier.id] } }]);
    expect(await routedOrders(reseller)).toEqual(
      [
        { external_order_id: idOf(delivered!), source: 'webhook' },
        { external_order_id: idOf(lost!), source: 'reconciliation' },
      ].sort((a, b) => a.external_order_id.localeCompare(b.external_order_id)),
    );

    // The next run finds nothing to do; the lost webhook, delivered late after all, creates nothing.
    const again = await finishedRun(reseller, await reconcile(reseller));
    expect(again).toMatchObject({ status: 'succeeded', ordersSeen: 2, ordersRouted: 0 });
    const late = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: reseller.store.shopDomain, secret: reseller.secret, topic: 'orders/create', payload: lost });
    expect(late.status).toBe(200);
    expect((late.body as any).syncJobIds).toEqual(jobs.get(idOf(lost!)));
    await expectRoutedOnce(reseller, [idOf(delivered!), idOf(lost!)]);
    expect(await auditEntries(reseller, 'order.reconciled')).toHaveLength(1);
    expect(sandbox.ordersFor(reseller.supplier.shopDomain)).toHaveLength(2);
  });

  it('orders whose webhooks arrive during a run are each routed once', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const held = await placeOrders(sandbox, reseller, 6, 'hold');
    // The store holds the run's list until every webhook is in, so they arrive while the run is listing.
    sandbox.setFaults(reseller.store.shopDomain, { holdRequestsNext: 1 });
    const id = await reconcile(reseller);
    await waitFor(async () => sandbox.heldRequestCount(reseller.store.shopDomain) === 1, 15_000, 'the run to be listing');
    const deliveries = await sandbox.releaseWebhooks(reseller.store.shopDomain);
    expect(deliveries.map((delivery) => delivery.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect((await runsOf(reseller)).find((run) => run.id === id)?.status).toBe('running');
    expect(sandbox.releaseRequests(reseller.store.shopDomain)).toBe(1);
    const run = await finishedRun(reseller, id);
    expect(run).toMatchObject({ status: 'succeeded', ordersSeen: 6, ordersRouted: 0 });

    const jobs = await expectRoutedOnce(reseller, held.map(idOf));
    held.forEach((order, index) => expect((deliveries[index]!.body as any).syncJobIds).toEqual(jobs.get(idOf(order))));
    expect(await auditEntries(reseller, 'order.reconciled')).toEqual([]);
    expect(new Set((await routedOrders(reseller)).map((row) => row.source))).toEqual(new Set(['webhook']));
    await supplierOrders(sandbox, reseller, 6);
  });

  it('orders whose webhooks race a run are routed once, by whichever came first', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const held = await placeOrders(sandbox, reseller, 10, 'hold');
    sandbox.clearFaults(reseller.store.shopDomain);
    const id = await reconcile(reseller);
    await sandbox.releaseWebhooks(reseller.store.shopDomain);
    const run = await finishedRun(reseller, id);
    expect(run).toMatchObject({ status: 'succeeded', ordersSeen: 10 });

    await expectRoutedOnce(reseller, held.map(idOf));
    const routed = await routedOrders(reseller);
    expect(routed).toHaveLength(10);
    const byReconciliation = routed.filter((row) => row.source === 'reconciliation').map((row) => row.external_order_id);
    expect(run.ordersRouted).toBe(byReconciliation.length);
    expect((await auditEntries(reseller, 'order.reconciled')).map((entry) => entry.resource_id).sort()).toEqual(byReconciliation);
    expect(await auditEntries(reseller, 'sync_job.created')).toHaveLength(10);
    await supplierOrders(sandbox, reseller, 10);
  });

  it('a cancelled order is not routed', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const [order] = await placeOrders(sandbox, reseller, 1, 'drop');
    sandbox.cancelOrder(reseller.store.shopDomain, platform, order!.id as number | string);
    const run = await finishedRun(reseller, await reconcile(reseller));
    expect(run).toMatchObject({ status: 'succeeded', ordersSeen: 1, ordersRouted: 0 });
    expect((await jobsByOrder(reseller)).size).toBe(0);
    expect(await routedOrders(reseller)).toEqual([]);
    expect(await auditEntries(reseller, 'order.reconciled')).toEqual([]);
  });

  it('skips an order with text no database can store (its webhook would have been refused) and routes the others', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const [first] = await placeOrders(sandbox, reseller, 1, 'drop');
    const poison = JSON.parse(JSON.stringify(orderOf(sandbox, reseller)).replace('"ANV-1"', '"ANV-1\\u0000"'));
    sandbox.seedOrder(reseller.store.shopDomain, platform, poison);
    const [last] = await placeOrders(sandbox, reseller, 1, 'drop');
    const run = await finishedRun(reseller, await reconcile(reseller));
    expect(run).toMatchObject({ status: 'succeeded', ordersSeen: 3, ordersRouted: 2 });
    expect([...(await jobsByOrder(reseller)).keys()].sort()).toEqual([idOf(first!), idOf(last!)].sort());
    // The next run starts after it: nothing holds the store back.
    expect(await finishedRun(reseller, await reconcile(reseller))).toMatchObject({ status: 'succeeded', ordersRouted: 0 });
  });

  it('lists across pages and routes every order', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const lost = await placeOrders(sandbox, reseller, 5, 'drop');
    sandbox.setListPageSize(reseller.store.shopDomain, 2);
    const run = await finishedRun(reseller, await reconcile(reseller));
    expect(run).toMatchObject({ status: 'succeeded', ordersSeen: 5, ordersRouted: 5 });
    // platform_b asks again from the second before each page's last order (src/platforms/time-paging.ts):
    // one call more for each page boundary that falls between two seconds of creation times.
    const calls = listCalls(sandbox, reseller).length;
    if (platform === 'platform_b') expect(calls).toBeGreaterThanOrEqual(3);
    else expect(calls).toBe(3);
    await expectRoutedOnce(reseller, lost.map(idOf));
    const watermark = await watermarkOf(reseller);
    const newest = Math.max(...lost.map((order) => Date.parse(String(order.created_at ?? order.createdAt ?? `${String(order.date_created_gmt)}Z`))));
    expect(Math.abs(watermark!.watermark.getTime() - newest)).toBeLessThan(1_000);
    await supplierOrders(sandbox, reseller, 5);
  });

  it.for([
    ['401', { failNext: 1, status: 401 }, /answered 401/],
    ['503', { failNext: 1, status: 503 }, /answered 503/],
    ['429', { rateLimitNext: 4, retryAfterSeconds: 1 }, /answered 429/],
  ] as const)('a %s on page 2 fails the run and keeps the watermark; the next run catches up', async ([_status, faults, error], { sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const lost = await placeOrders(sandbox, reseller, 3, 'drop');
    sandbox.setListPageSize(reseller.store.shopDomain, 2);
    sandbox.setFaults(reseller.store.shopDomain, { faultsAfter: 1, ...faults });

    const failed = await finishedRun(reseller, await reconcile(reseller));
    expect(failed).toMatchObject({ status: 'failed', ordersSeen: 2, ordersRouted: 2 });
    expect(failed.error).toMatch(error);
    expect(failed.error).not.toContain(reseller.accessToken);
    expect(failed.finishedAt).not.toBeNull();
    expect(await watermarkOf(reseller)).toBeUndefined();

    sandbox.clearFaults(reseller.store.shopDomain);
    const next = await finishedRun(reseller, await reconcile(reseller));
    expect(next).toMatchObject({ status: 'succeeded', ordersSeen: 3, ordersRouted: 1, error: null });
    await expectRoutedOnce(reseller, lost.map(idOf));
    expect(await auditEntries(reseller, 'order.reconciled')).toHaveLength(3);
    expect(await watermarkOf(reseller)).toBeDefined();
  });
});

describe('POST /v1/reseller_stores/{id}/reconcile and GET …/reconciliations', () => {
  it('answers 409 while a run of the store is in progress, and lists runs newest first', async ({ api, sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, 'platform_a');
    sandbox.setFaults(reseller.store.shopDomain, { latencyMs: 1_500 });
    const first = await reconcile(reseller);
    const second = await api.post(`/v1/reseller_stores/${reseller.store.id}/reconcile`, { token: reseller.user.token, body: {} });
    expectError(second, 409, 'conflict');
    expect(second.body.error.details).toEqual({ reason: 'reconciliation_in_progress' });
    await finishedRun(reseller, first);
    sandbox.clearFaults(reseller.store.shopDomain);
    const third = await reconcile(reseller);
    await finishedRun(reseller, third);

    const response = await api.get(`/v1/reseller_stores/${reseller.store.id}/reconciliations`, { token: reseller.user.token });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ object: 'list', has_more: false, url: `/v1/reseller_stores/${reseller.store.id}/reconciliations` });
    expect(response.body.data.map((run: any) => run.id)).toEqual([third, first]);
    expect(response.body.data[1]).toEqual({
      id: first,
      resellerStoreId: reseller.store.id,
      trigger: 'manual',
      status: 'succeeded',
      since: expect.any(String),
      startedAt: expect.any(String),
      finishedAt: expect.any(String),
      ordersSeen: 0,
      ordersRouted: 0,
      error: null,
    });
  });

  it('fails a run whose process was lost (its lease expired) instead of blocking the store', async ({ service, sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, 'platform_b');
    const lostRun = 'rec_lost_process_run';
    await queryRows(
      service.databaseUrl,
      `insert into reconciliation_runs (id, owner_id, reseller_store_id, trigger, status, orders_seen, orders_routed, takes, lease_expires_at, started_at)
       values ($1, $2, $3, 'scheduled', 'running', 0, 0, 1, now() - interval '1 second', now() - interval '2 minutes')`,
      [lostRun, await ownerOf(service, reseller), reseller.store.id],
    );
    const next = await finishedRun(reseller, await reconcile(reseller));
    expect(next.status).toBe('succeeded');
    const lost = (await runsOf(reseller)).find((run) => run.id === lostRun);
    expect(lost).toMatchObject({ status: 'failed', error: expect.stringMatching(/^Abandoned/), finishedAt: expect.any(String) });
  });

  it('accepts no body at all, and records who asked in the audit log', async ({ api, sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, 'custom');
    const response = await api.post(`/v1/reseller_stores/${reseller.store.id}/reconcile`, { token: reseller.user.token });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    expect(response.body).toEqual({ reconciliationId: expect.stringMatching(/^rec_/), request_id: expect.any(String) });
    await finishedRun(reseller, response.body.reconciliationId);
    const [requested] = await auditEntries(reseller, 'reconciliation.requested');
    expect(requested).toMatchObject({ resource_id: response.body.reconciliationId, metadata: { since: null } });
  });

  it('lists from `since` when given, within the last 30 days', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, 'platform_a');
    // Placed before the store was connected: only a run from an earlier `since` sees it.
    const before = orderOf(sandbox, reseller, new Date(Date.now() - 60 * 60_000));
    sandbox.seedOrder(reseller.store.shopDomain, 'platform_a', before);
    const automatic = await finishedRun(reseller, await reconcile(reseller));
    expect(automatic).toMatchObject({ status: 'succeeded', ordersSeen: 0 });

    const since = new Date(Date.now() - 2 * 60 * 60_000).toISOString();
    const run = await finishedRun(reseller, await reconcile(reseller, { since }));
    expect(run).toMatchObject({ status: 'succeeded', since, ordersSeen: 1, ordersRouted: 1 });
    await expectRoutedOnce(reseller, [idOf(before)]);
  });

  it.for([
    ['more than 30 days back', new Date(Date.now() - 31 * 24 * 60 * 60_000).toISOString()],
    ['in the future', new Date(Date.now() + 60 * 60_000).toISOString()],
    ['not a date-time', 'yesterday'],
  ] as const)('refuses a since %s with 400', async ([_case, since], { api, sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, 'platform_a');
    const response = await api.post(`/v1/reseller_stores/${reseller.store.id}/reconcile`, { token: reseller.user.token, body: { since } });
    expectError(response, 400, 'validation_failed');
    expect(response.body.error.param).toBe('since');
    expect(await runsOf(reseller)).toEqual([]);
  });

  it("answers 404 for another user's store, a missing one, and reconcile of a deleted one", async ({ api, sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, 'platform_b');
    const stranger = await registerUser(api);
    for (const path of [`/v1/reseller_stores/${reseller.store.id}`, '/v1/reseller_stores/rst_missing']) {
      expectError(await api.post(`${path}/reconcile`, { token: stranger.token, body: {} }), 404, 'not_found');
      expectError(await api.get(`${path}/reconciliations`, { token: stranger.token }), 404, 'not_found');
    }
    expect(await runsOf(reseller)).toEqual([]);

    await finishedRun(reseller, await reconcile(reseller));
    expect((await api.delete(`/v1/reseller_stores/${reseller.store.id}`, { token: reseller.user.token })).status).toBe(204);
    expectError(await api.post(`/v1/reseller_stores/${reseller.store.id}/reconcile`, { token: reseller.user.token, body: {} }), 404, 'not_found');
    expect(await runsOf(reseller)).toHaveLength(1);
  });

  it('exposes runs by outcome, orders routed and watermark lag per store in /metrics', async ({ service, sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, 'custom');
    await placeOrders(sandbox, reseller, 1, 'drop');
    sandbox.setFaults(reseller.store.shopDomain, { failNext: 1, status: 401 });
    expect(await finishedRun(reseller, await reconcile(reseller))).toMatchObject({ status: 'failed' });
    expect(await finishedRun(reseller, await reconcile(reseller))).toMatchObject({ status: 'succeeded', ordersRouted: 1 });
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/^reconciliation_runs_total\{outcome="succeeded"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^reconciliation_runs_total\{outcome="failed"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^reconciliation_orders_routed_total [1-9]\d*$/m);
    const lag = new RegExp(`^reconciliation_watermark_lag_seconds\\{reseller_store_id="${reseller.store.id}"\\} ([\\d.e+-]+)$`, 'm').exec(metrics);
    expect(Number(lag?.[1])).toBeLessThan(60);
  });
});

describe('the grace period', () => {
  let patient: TestService;
  it.beforeAll(async ({ sandbox }) => {
    patient = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, RECONCILE_INTERVAL_MS: '0', RECONCILE_GRACE_MS: '600000' });
  });
  afterAll(() => patient?.stop());

  it('leaves orders younger than RECONCILE_GRACE_MS to their webhook', async ({ sandbox }) => {
    const reseller = await openReseller(sandbox, { api: patient.api, url: patient.url, databaseUrl: patient.databaseUrl }, 'platform_b');
    const old = orderOf(sandbox, reseller, new Date(Date.now() - 20 * 60_000));
    sandbox.seedOrder(reseller.store.shopDomain, 'platform_b', old);
    const [young] = await placeOrders(sandbox, reseller, 1, 'drop');
    const run = await finishedRun(reseller, await reconcile(reseller, { since: new Date(Date.now() - 60 * 60_000).toISOString() }));
    expect(run).toMatchObject({ status: 'succeeded', ordersSeen: 1, ordersRouted: 1 });
    const jobs = await jobsByOrder(reseller);
    expect(jobs.has(idOf(old))).toBe(true);
    expect(jobs.has(idOf(young!))).toBe(false);
  });
});

describe('a store deleted during a run', () => {
  it('is not routed further: the run fails saying so', async ({ api, sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, 'platform_a');
    await placeOrders(sandbox, reseller, 3, 'drop');
    sandbox.setListPageSize(reseller.store.shopDomain, 1);
    // The store is deleted while the run waits for its first page.
    sandbox.setFaults(reseller.store.shopDomain, { holdRequestsNext: 1 });
    const id = await reconcile(reseller);
    await waitFor(async () => sandbox.heldRequestCount(reseller.store.shopDomain) === 1, 10_000, 'the first page to be asked for');
    expect((await api.delete(`/v1/reseller_stores/${reseller.store.id}`, { token: reseller.user.token })).status).toBe(204);
    expect(sandbox.releaseRequests(reseller.store.shopDomain)).toBe(1);
    const run = await finishedRun(reseller, id);
    expect(run).toMatchObject({ status: 'failed', error: 'The reseller store was deleted.', ordersRouted: 0 });
    expect(listCalls(sandbox, reseller)).toHaveLength(1);
  });
});

describe('a reseller store with a backlog of calls', () => {
  it("waits its turn behind them: the run succeeds instead of failing unsent", async ({ service, sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, 'platform_a');
    const lost = await placeOrders(sandbox, reseller, 2, 'drop');
    // Turns reserved for 8 s of the store's calls (platform_a: 2 calls/s, a burst of 40), as a
    // backlog of fulfillments to it would; a listing waiting only 5 s would fail unsent.
    const store = { storeId: allowanceKeyOf(service.ctx.secrets, 'platform_a', reseller.store.shopDomain, reseller.accessToken), platform: 'platform_a' as const };
    await service.ctx.pacer.turns(Array.from({ length: 55 }, () => ({ store })));

    const startedAt = Date.now();
    const run = await finishedRun(reseller, await reconcile(reseller), 30_000);
    expect(run).toMatchObject({ status: 'succeeded', ordersSeen: 2, ordersRouted: 2, error: null });
    expect(Date.now() - startedAt).toBeGreaterThan(5_000);
    await expectRoutedOnce(reseller, lost.map(idOf));
  }, 45_000);
});
