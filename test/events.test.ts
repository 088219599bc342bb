/**
 * Events (events.md, "Event"): every type reaches a real receiver with a valid Standard Webhooks
 * signature, `data.object` is the resource as its GET showed it at the moment of the change,
 * `GET /v1/events` lists and filters them for their owner only, an endpoint gets only the types it
 * asked for, a rolled-back change emits nothing, and a slow endpoint does not hold up routing.
 */
import { sql } from 'kysely';
import { describe, expect } from 'vitest';
import { sqlOf } from '../src/db/sql.ts';
import { buildFulfillmentPayload, sendWebhook } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { finishedRun, idOf, jobsByOrder, openReseller, placeOrders, reconcile } from './support/reconciliation.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';
import type { ReceivedDelivery } from './support/webhook-receiver.ts';

test.override('serviceEnv', {
  SYNC_RETRY_BASE_DELAY_MS: '50',
  WEBHOOK_DELIVERY_SCHEDULE_MS: '0,200,400',
  // Reconciliation runs only when asked, and every order is old enough for it at once.
  RECONCILE_INTERVAL_MS: '0',
  RECONCILE_GRACE_MS: '0',
});

let nextOrderId = 930_000 + Math.floor(Math.random() * 10_000) * 10;

interface Shop {
  user: TestUser;
  reseller: { id: string; shopDomain: string };
  resellerSecret: string;
  supplier: { id: string; shopDomain: string; vendorTag: string };
  supplierSecret: string;
  /** Receives every event type. */
  path: string;
  endpointId: string;
}

const it = test
  .extend('openShop', { scope: 'file' }, ({ api, receiver }) => async (enabledEvents: string[] = ['*']): Promise<Shop> => {
    const user = await registerUser(api);
    const resellerSecret = `whsec_reseller_${uniqueSuffix()}`;
    const supplierSecret = `whsec_supplier_${uniqueSuffix()}`;
    const reseller = await createResellerStore(api, user.token, { platform: 'platform_a', webhookSecret: resellerSecret });
    const supplier = await createSourceStore(api, user.token, reseller.id, { platform: 'custom', vendorTag: `Acme ${uniqueSuffix()}`, webhookSecret: supplierSecret });
    const path = `/events/${uniqueSuffix()}`;
    const endpoint = await api.post('/v1/webhook_endpoints', { token: user.token, body: { url: receiver.url(path), enabledEvents } });
    expect(endpoint.status).toBe(201);
    receiver.trust(path, [endpoint.body.secret]);
    return { user, reseller, resellerSecret, supplier, supplierSecret, path, endpointId: endpoint.body.id };
  })
  /** An order with a line for the supplier (and optionally one nobody sells), posted as the platform would. */
  .extend('postOrder', { scope: 'file' }, ({ service, sandbox }) => async (shop: Shop, options: { unmatched?: boolean } = {}) => {
    const id = nextOrderId++;
    const lines = [{ sku: 'A-1', title: 'Anvil', vendor: shop.supplier.vendorTag, quantity: 1, price: '25.00' }];
    if (options.unmatched) lines.push({ sku: 'Z-9', title: 'Zeppelin', vendor: 'Nobody', quantity: 2, price: '9.00' });
    const payload = sandbox.buildOrderPayload('platform_a', { id, lines });
    sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', payload);
    const response = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: shop.reseller.shopDomain, secret: shop.resellerSecret, topic: 'orders/create', payload });
    return { orderId: String(id), response, jobId: (response.body as { syncJobIds?: string[] }).syncJobIds?.[0] };
  })
  .extend('eventsAt', { scope: 'file' }, ({ receiver }) => (path: string, type?: string) =>
    receiver.at(path).filter((delivery) => !type || delivery.event?.type === type))
  .extend('waitForEvent', { scope: 'file' }, ({ eventsAt }) => (path: string, type: string, about?: string, timeoutMs = 15_000): Promise<ReceivedDelivery> =>
    waitFor(async () => eventsAt(path, type).find((delivery) => !about || JSON.stringify(delivery.event!.data.object).includes(about)), timeoutMs, `${type} at ${path}`))
  .extend('getJob', { scope: 'file' }, ({ api }) => async (shop: Shop, jobId: string) => {
    const response = await api.get(`/v1/sync_jobs/${jobId}`, { token: shop.user.token });
    const { request_id: _request, ...job } = response.body;
    return job;
  });

describe('every event type, delivered and verified', () => {
  it('sync_job.created and order.unmatched when an order is routed; sync_job.completed when it is placed', async ({ service, api, sandbox, openShop, postOrder, waitForEvent, getJob }) => {
    const shop = await openShop();
    const { orderId, response, jobId } = await postOrder(shop, { unmatched: true });
    expect(response.status).toBe(200);

    const created = await waitForEvent(shop.path, 'sync_job.created', jobId);
    expect(created.verifiedBy).toEqual([0]);
    expect(created.event).toMatchObject({ object: 'event', resellerStoreId: shop.reseller.id, data: { object: { id: jobId, status: 'pending', attempts: 0, externalOrderId: orderId, fulfillments: [] } } });

    const unmatched = await waitForEvent(shop.path, 'order.unmatched', orderId);
    expect(unmatched.verifiedBy).toEqual([0]);
    expect(unmatched.event!.data.object).toEqual({ resellerStoreId: shop.reseller.id, externalOrderId: orderId, lines: [{ sku: 'Z-9', title: 'Zeppelin', vendor: 'Nobody', quantity: 2 }] });

    const completed = await waitForEvent(shop.path, 'sync_job.completed', jobId);
    expect(completed.verifiedBy).toEqual([0]);
    // Exactly what the job's GET shows (nothing has changed it since).
    expect(completed.event!.data.object).toEqual(await getJob(shop, jobId!));
    expect(completed.event!.data.object.status).toBe('completed');

    // A redelivery of the order creates nothing, so it emits nothing either.
    const again = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: shop.reseller.shopDomain, secret: shop.resellerSecret, topic: 'orders/create', payload: sandbox.buildOrderPayload('platform_a', { id: Number(orderId), lines: [{ sku: 'A-1', title: 'Anvil', vendor: shop.supplier.vendorTag, quantity: 1, price: '25.00' }, { sku: 'Z-9', title: 'Zeppelin', vendor: 'Nobody', quantity: 2, price: '9.00' }] }) });
    expect(again.status).toBe(200);
    const types = (await api.get(`/v1/events?reseller_store_id=${shop.reseller.id}`, { token: shop.user.token })).body.data.map((event: { type: string }) => event.type);
    expect(types.filter((type: string) => type === 'sync_job.created' || type === 'order.unmatched').sort()).toEqual(['order.unmatched', 'sync_job.created']);
  });

  it('sync_job.created with no endpoint subscribed to it: written with the job, listed once as the job was, no delivery', async ({ service, api, sandbox, openShop, postOrder, waitForEvent }) => {
    // The endpoint wants order.unmatched only: the routing's insert writes the job's event itself.
    const shop = await openShop(['order.unmatched']);
    const { orderId, response, jobId } = await postOrder(shop, { unmatched: true });
    expect(response.status).toBe(200);
    const listed = async () =>
      (await api.get(`/v1/events?reseller_store_id=${shop.reseller.id}`, { token: shop.user.token })).body.data.filter((event: { type: string }) => event.type === 'sync_job.created');
    const [created, ...others] = await listed();
    expect(others).toEqual([]);
    expect(created).toMatchObject({ object: 'event', resellerStoreId: shop.reseller.id, data: { object: { id: jobId, status: 'pending', attempts: 0, externalOrderId: orderId, fulfillments: [] } } });
    // The same routing's order.unmatched still goes through the outbox, to the endpoint that wants it.
    expect((await waitForEvent(shop.path, 'order.unmatched', orderId)).verifiedBy).toEqual([0]);
    const deliveries = `select d.id from webhook_deliveries d join events e on e.id = d.event_id where e.type = $1 and e.reseller_store_id = $2`;
    expect(await queryRows(service.databaseUrl, deliveries, ['sync_job.created', shop.reseller.id])).toEqual([]);

    // A redelivery of the order creates no job, so no second event.
    const again = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: shop.reseller.shopDomain, secret: shop.resellerSecret, topic: 'orders/create', payload: sandbox.buildOrderPayload('platform_a', { id: Number(orderId), lines: [{ sku: 'A-1', title: 'Anvil', vendor: shop.supplier.vendorTag, quantity: 1, price: '25.00' }] }) });
    expect(again.status).toBe(200);
    expect((await listed()).map((event: { id: string }) => event.id)).toEqual([created.id]);
  });

  it('sync_job.failed on every failed attempt, sync_job.dead after the last, sync_job.retried by hand', async ({ api, sandbox, openShop, postOrder, eventsAt, waitForEvent, getJob }) => {
    const shop = await openShop();
    sandbox.setFaults(shop.supplier.shopDomain, { alwaysFail: true, status: 503 });
    const { jobId } = await postOrder(shop);
    const dead = await waitForEvent(shop.path, 'sync_job.dead', jobId);
    expect(dead.event!.data.object).toMatchObject({ id: jobId, status: 'dead', attempts: 4, errorMessage: expect.stringContaining('503') });
    expect(dead.event!.data.object).toEqual(await getJob(shop, jobId!));
    // Deliveries of one endpoint run side by side: the last failure's may land after the death's.
    const failed = await waitFor(async () => (eventsAt(shop.path, 'sync_job.failed').length >= 4 ? eventsAt(shop.path, 'sync_job.failed') : null), 15_000, 'four sync_job.failed');
    const byAttempt = failed.map((delivery) => delivery.event!.data.object).sort((a, b) => a.attempts - b.attempts);
    expect(byAttempt.map((job) => job.attempts)).toEqual([1, 2, 3, 4]);
    expect(failed.every((delivery) => delivery.verifiedBy.length === 1)).toBe(true);
    // The last failed attempt's event is the job as that failure left it: dead, as sync_job.dead shows it.
    expect(byAttempt.map((job) => job.status)).toEqual(['failed', 'failed', 'failed', 'dead']);
    expect(byAttempt[3]).toEqual(dead.event!.data.object);
    const listed = await api.get(`/v1/events?reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    const ofJob = listed.body.data.filter((event: { data: { object: { id: string } } }) => event.data.object.id === jobId).reverse();
    expect(ofJob.map((event: { type: string }) => event.type)).toEqual(['sync_job.created', 'sync_job.failed', 'sync_job.failed', 'sync_job.failed', 'sync_job.failed', 'sync_job.dead']);

    sandbox.clearFaults(shop.supplier.shopDomain);
    const retry = await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token });
    expect(retry.status).toBe(200);
    const retried = await waitForEvent(shop.path, 'sync_job.retried', jobId);
    const { request_id: _request, ...asRetried } = retry.body;
    expect(retried.event!.data.object).toEqual(asRetried);
    expect(retried.verifiedBy).toEqual([0]);
    await waitForEvent(shop.path, 'sync_job.completed', jobId);
  });

  it('sync_job.retried for every job a bulk retry retries', async ({ api, sandbox, openShop, postOrder, waitForEvent }) => {
    const shop = await openShop();
    sandbox.setFaults(shop.supplier.shopDomain, { alwaysFail: true, status: 503 });
    const jobIds = [(await postOrder(shop)).jobId!, (await postOrder(shop)).jobId!];
    for (const jobId of jobIds) await waitForEvent(shop.path, 'sync_job.dead', jobId);
    sandbox.clearFaults(shop.supplier.shopDomain);
    const bulk = await api.post('/v1/sync_jobs/bulk_retry', { token: shop.user.token, body: { status: 'dead', reseller_store_id: shop.reseller.id } });
    expect(bulk.status).toBe(200);
    expect([...bulk.body.syncJobIds].sort()).toEqual([...jobIds].sort());
    for (const jobId of jobIds) {
      const retried = await waitForEvent(shop.path, 'sync_job.retried', jobId);
      expect(retried.verifiedBy).toEqual([0]);
      expect(retried.event!.data.object).toMatchObject({ id: jobId, status: 'pending', attempts: 4, errorMessage: null });
    }
  });

  it('fulfillment.completed when tracking reaches the reseller order, fulfillment.dead when it cannot', async ({ service, sandbox, openShop, postOrder, waitForEvent, getJob }) => {
    const shop = await openShop();
    const { jobId } = await postOrder(shop);
    await waitForEvent(shop.path, 'sync_job.completed', jobId);
    const job = await getJob(shop, jobId!);
    const deliver = (trackingNumbers: string[]) =>
      sendWebhook({
        targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
        shopDomain: shop.supplier.shopDomain,
        secret: shop.supplierSecret,
        topic: 'fulfillments/create',
        payload: buildFulfillmentPayload('custom', { orderId: job.sourceOrderId, trackingNumbers }),
      });

    expect((await deliver(['TRK-OK'])).status).toBe(200);
    const completed = await waitForEvent(shop.path, 'fulfillment.completed', 'TRK-OK');
    expect(completed.verifiedBy).toEqual([0]);
    expect(completed.event).toMatchObject({ resellerStoreId: shop.reseller.id, data: { object: { syncJobId: jobId, status: 'completed', trackingNumbers: ['TRK-OK'] } } });
    const shown = (await getJob(shop, jobId!)).fulfillments.find((fulfillment: { id: string }) => fulfillment.id === completed.event!.data.object.id);
    expect(completed.event!.data.object).toEqual(shown);

    sandbox.setFaults(shop.reseller.shopDomain, { alwaysFail: true, status: 500 });
    expect((await deliver(['TRK-DOOMED'])).status).toBe(200);
    const dead = await waitForEvent(shop.path, 'fulfillment.dead', 'TRK-DOOMED');
    expect(dead.event!.data.object).toMatchObject({ syncJobId: jobId, status: 'dead', attempts: 4 });
    sandbox.clearFaults(shop.reseller.shopDomain);
  });

  it('order.reconciled when reconciliation routes an order whose webhook was lost', async ({ service, api, sandbox, receiver, eventsAt, waitForEvent }) => {
    const reseller = await openReseller(sandbox, { api, url: service.url, databaseUrl: service.databaseUrl }, 'platform_b');
    const path = `/events/${uniqueSuffix()}`;
    const endpoint = await api.post('/v1/webhook_endpoints', { token: reseller.user.token, body: { url: receiver.url(path), enabledEvents: ['order.reconciled', 'sync_job.created'] } });
    receiver.trust(path, [endpoint.body.secret]);
    const [lost] = await placeOrders(sandbox, reseller, 1, 'drop');
    await finishedRun(reseller, await reconcile(reseller));

    const reconciled = await waitForEvent(path, 'order.reconciled', idOf(lost!));
    expect(reconciled.verifiedBy).toEqual([0]);
    const jobs = await jobsByOrder(reseller);
    expect(reconciled.event).toMatchObject({ resellerStoreId: reseller.store.id });
    expect(reconciled.event!.data.object).toEqual({ resellerStoreId: reseller.store.id, externalOrderId: idOf(lost!), syncJobIds: jobs.get(idOf(lost!)) });
    const created = await waitForEvent(path, 'sync_job.created', idOf(lost!));
    expect(created.event!.data.object.id).toBe(jobs.get(idOf(lost!))![0]);
    // A second run routes nothing, and says nothing.
    await finishedRun(reseller, await reconcile(reseller));
    expect(eventsAt(path, 'order.reconciled')).toHaveLength(1);
  });
});

describe('subscriptions', () => {
  it('an endpoint gets only the types it enabled; a disabled one gets nothing new', async ({ service, api, sandbox, receiver, openShop, postOrder, waitForEvent }) => {
    const shop = await openShop();
    const onlyDead = `/events/only-dead-${uniqueSuffix()}`;
    const endpoint = await api.post('/v1/webhook_endpoints', { token: shop.user.token, body: { url: receiver.url(onlyDead), enabledEvents: ['sync_job.dead'] } });
    const disabled = `/events/disabled-${uniqueSuffix()}`;
    const off = await api.post('/v1/webhook_endpoints', { token: shop.user.token, body: { url: receiver.url(disabled), enabledEvents: ['*'] } });
    await api.patch(`/v1/webhook_endpoints/${off.body.id}`, { token: shop.user.token, body: { status: 'disabled' } });
    receiver.trust(onlyDead, [endpoint.body.secret]);

    sandbox.setFaults(shop.supplier.shopDomain, { alwaysFail: true, status: 500 });
    const { jobId } = await postOrder(shop);
    await waitForEvent(onlyDead, 'sync_job.dead', jobId);
    await waitForEvent(shop.path, 'sync_job.dead', jobId);
    expect(receiver.at(onlyDead).map((delivery) => delivery.event!.type)).toEqual(['sync_job.dead']);
    expect(receiver.at(disabled)).toEqual([]);
    expect(await queryRows(service.databaseUrl, 'select id from webhook_deliveries where endpoint_id = $1', [off.body.id])).toEqual([]);
    sandbox.clearFaults(shop.supplier.shopDomain);
  });
});

describe('GET /v1/events', () => {
  it('lists the owner\'s events newest first, with filters and paging; others see none of them', async ({ api, openShop, postOrder, waitForEvent }) => {
    const shop = await openShop();
    const { jobId } = await postOrder(shop, { unmatched: true });
    await waitForEvent(shop.path, 'sync_job.completed', jobId);
    const list = async (query: string, token = shop.user.token) => {
      const response = await api.get(`/v1/events${query}`, { token });
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      return response.body;
    };

    const all = await list(`?reseller_store_id=${shop.reseller.id}`);
    expect(all).toMatchObject({ object: 'list', has_more: false, url: '/v1/events' });
    expect(all.data.map((event: { type: string }) => event.type).sort()).toEqual(['order.unmatched', 'sync_job.completed', 'sync_job.created']);
    const ids = all.data.map((event: { id: string }) => event.id);
    expect(ids).toEqual([...ids].sort().reverse());
    expect(all.data.every((event: { id: string }) => /^evt_[0-9a-f]{32}$/.test(event.id))).toBe(true);

    expect((await list(`?type=sync_job.completed&reseller_store_id=${shop.reseller.id}`)).data.map((event: { id: string }) => event.id)).toEqual([ids[0]]);
    const page = await list(`?limit=1&reseller_store_id=${shop.reseller.id}`);
    expect(page).toMatchObject({ has_more: true, data: [{ id: ids[0] }] });
    expect((await list(`?limit=5&starting_after=${ids[0]}&reseller_store_id=${shop.reseller.id}`)).data.map((event: { id: string }) => event.id)).toEqual(ids.slice(1));

    const oldest = all.data.at(-1).createdAt;
    expect((await list(`?created_after=${encodeURIComponent(oldest)}&reseller_store_id=${shop.reseller.id}`)).data.every((event: { createdAt: string }) => event.createdAt > oldest)).toBe(true);
    expect((await list(`?created_before=${encodeURIComponent(oldest)}&reseller_store_id=${shop.reseller.id}`)).data).toEqual([]);
    expect((await list('?created_after=2999-01-01T00:00:00.000Z')).data).toEqual([]);

    const one = await api.get(`/v1/events/${ids[0]}`, { token: shop.user.token });
    expect(one.status).toBe(200);
    const { request_id: _request, ...event } = one.body;
    expect(event).toEqual(all.data[0]);

    const stranger = await registerUser(api);
    expect((await list('', stranger.token)).data).toEqual([]);
    expect((await list(`?reseller_store_id=${shop.reseller.id}`, stranger.token)).data).toEqual([]);
    expect((await api.get(`/v1/events/${ids[0]}`, { token: stranger.token })).status).toBe(404);

    expect((await api.get('/v1/events?type=sync_job.exploded', { token: shop.user.token })).status).toBe(400);
    for (const time of ['yesterday', '0000-01-01T00:00:00Z']) {
      const response = await api.get(`/v1/events?created_after=${time}`, { token: shop.user.token });
      expect(response.status, time).toBe(400);
      expect(response.body.error.code).toBe('validation_failed');
    }
  });
});

describe('the outbox', () => {
  it('a change that rolls back emits nothing', async ({ service, api, sandbox, openShop, postOrder, eventsAt, waitForEvent, getJob }) => {
    const shop = await openShop();
    sandbox.setFaults(shop.supplier.shopDomain, { alwaysFail: true, status: 500 });
    const { jobId, orderId } = await postOrder(shop);
    await waitForEvent(shop.path, 'sync_job.dead', jobId);
    sandbox.clearFaults(shop.supplier.shopDomain);

    // Audit inserts of retries and new jobs fail, so their transactions roll back: the change, its queue message and its event.
    const db = sqlOf(service.ctx.orm);
    await sql`create or replace function refuse_audit() returns trigger language plpgsql as $$
      begin if new.action in ('sync_job.retried', 'sync_job.created') then raise exception 'refused by the test'; end if; return new; end $$`.execute(db);
    await sql`create trigger refuse_audit before insert on audit_entries for each row execute function refuse_audit()`.execute(db);
    try {
      const retry = await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token });
      expect(retry.status).toBe(500);
      expect((await getJob(shop, jobId!)).status).toBe('dead');
      const refusedOrder = await postOrder(shop);
      expect(refusedOrder.response.status).toBe(500);
    } finally {
      await sql`drop trigger refuse_audit on audit_entries`.execute(db);
    }
    const rows = await queryRows<{ type: string; payload: string }>(service.databaseUrl, 'select type, payload from events where reseller_store_id = $1', [shop.reseller.id]);
    expect(rows.filter((row) => row.type === 'sync_job.retried')).toEqual([]);
    expect(rows.filter((row) => row.type === 'sync_job.created').map((row) => JSON.parse(row.payload).data.object.externalOrderId)).toEqual([orderId]);
    expect(eventsAt(shop.path, 'sync_job.retried')).toEqual([]);
    expect(await queryRows(service.databaseUrl, `select d.id from webhook_deliveries d join events e on e.id = d.event_id where e.type = 'sync_job.retried' and e.reseller_store_id = $1`, [shop.reseller.id])).toEqual([]);
  });

  it('a slow endpoint does not hold up the routing of orders', async ({ receiver, openShop, postOrder, getJob }) => {
    const shop = await openShop();
    receiver.behave(shop.path, { hang: true });
    // A first order's events reach the endpoint, which hangs on them.
    expect((await postOrder(shop)).response.status).toBe(200);
    await waitFor(async () => receiver.at(shop.path).length > 0, 10_000, 'a delivery to the hanging endpoint');
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const { jobId, response } = await postOrder(shop);
      expect(response.status).toBe(200);
      const completed = await waitFor(async () => ((await getJob(shop, jobId!)).status === 'completed' ? Date.now() : null), 10_000, 'the job');
      // Routed and placed while every delivery to the endpoint hangs until its timeout (10 s).
      expect(completed - started).toBeLessThan(5_000);
    }
    receiver.releaseHanging();
  });
});

describe('metrics', () => {
  it('counts deliveries by outcome, times attempts and reports the oldest pending delivery', async ({ service }) => {
    const response = await fetch(`${service.url}/metrics`);
    const text = await response.text();
    expect(text).toMatch(/^webhook_deliveries_total\{outcome="succeeded"\} [1-9]\d*$/m);
    expect(text).toMatch(/^webhook_delivery_attempt_duration_seconds_count\{outcome="success"\} [1-9]\d*$/m);
    expect(text).toMatch(/^webhook_delivery_oldest_pending_age_seconds \d+(\.\d+)?$/m);
    expect(text).toMatch(/^queue_depth\{queue="webhook\.deliver"\} \d+$/m);
  });
});
