/**
 * Sync jobs end to end: POST /v1/sync_jobs through a real worker to the sandbox platform, with
 * the real database and queue. Retries and failures: sync-jobs.retries.test.ts; a worker dying
 * mid-call: sync-jobs.crash.test.ts; two workers and 500 jobs: sync-jobs.scale.test.ts.
 */
import { afterAll, describe, expect } from 'vitest';
import { canApply } from '../machines/sync-job.machine.ts';
import { SyncJob } from '../src/sync-jobs/entity.ts';
import { syncJobKind } from '../src/sync-jobs/kind.ts';
import type { ApiClient } from './support/api.ts';
import { allIds, expectError, ISO_UTC } from './support/assertions.ts';
import { registerUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';
import { startTestService, type TestService } from './support/service.ts';
import { waitFor } from './support/wait.ts';
import {
  addSupplier,
  auditOf,
  createJob,
  getJob,
  lineOf,
  messagesOfJob,
  newOrderId,
  openShop,
  seedResellerOrder,
  settled,
  waitForJob,
  type Shop,
  type Supplier,
} from './support/sync-jobs.ts';

const { transition: transitionJob, restore: persistedOf } = syncJobKind;

describe('a manual job', () => {
  let shop: Shop;
  let acme: Supplier;
  let bolts: Supplier;
  it.beforeAll(async ({ api }) => {
    shop = await openShop(api);
    // A custom supplier priced by percentage markup, and a platform_a one priced by field rules.
    acme = await addSupplier(api, shop, { vendorTag: 'Acme', pricingMode: 'percentage', pricingConfig: { type: 'percentage', value: 25 } });
    bolts = await addSupplier(api, shop, {
      platform: 'platform_a',
      vendorTag: 'Bolt Co',
      pricingMode: 'field_rules',
      pricingConfig: {
        type: 'field_rules',
        rules: [
          { field: 'price', op: 'multiply', value: 0.8 },
          { field: 'price', op: 'add', value: -50 },
          { field: 'sku', op: 'prefix', value: 'SUP-' },
          { field: 'title', op: 'suffix', value: ' (wholesale)' },
        ],
      },
    });
  });

  it('places ONE order holding only its vendor’s lines, priced by percentage, and records it', async ({ api, sandbox }) => {
    const orderId = seedResellerOrder(sandbox, shop, [
      { sku: 'A1', title: 'Anvil', vendor: ' acme', quantity: 2, price: '12.50' },
      { sku: 'B1', title: 'Bolt', vendor: 'Bolt Co', quantity: 3, price: '2.00' },
      { sku: 'A2', title: 'Rocket skates', vendor: 'ACME ', quantity: 1, price: '19.99' },
      { sku: 'Z1', title: 'Unrouted', vendor: 'Nobody', quantity: 1, price: '5.00' },
    ]);

    const created = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: acme.id, external_order_id: orderId } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      resellerStoreId: shop.reseller.id,
      sourceStoreId: acme.id,
      status: 'pending',
      attempts: 0,
      externalOrderId: orderId,
      sourceOrderId: null,
      errorMessage: null,
      completedAt: null,
      failedAt: null,
      deadAt: null,
    });
    expect(created.body.id).toMatch(/^job_/);
    expect(created.body.request_id).toBe(created.headers.get('x-request-id'));

    const done = await settled(api, shop.user.token, created.body.id);
    const orders = sandbox.ordersFor(acme.shopDomain);
    expect(orders).toHaveLength(1);
    const [order] = orders;
    // 12.50 / 1.25 = 10.00; 19.99 / 1.25 = 15.992 -> 15.99.
    expect(order!.body).toEqual(
      expect.objectContaining({
        reference: created.body.id,
        currency: 'USD',
        lines: [
          { sku: 'A1', title: 'Anvil', quantity: 2, unitPrice: '10.00' },
          { sku: 'A2', title: 'Rocket skates', quantity: 1, unitPrice: '15.99' },
        ],
      }),
    );
    expect(order!.idempotencyKey).toBe(`sync-job:${created.body.id}`);
    expect(done).toMatchObject({ status: 'completed', attempts: 1, sourceOrderId: String(order!.id), errorMessage: null, failedAt: null, deadAt: null });
    expect(done.completedAt).toMatch(ISO_UTC);
    expect(Date.parse(done.completedAt)).toBeGreaterThanOrEqual(Date.parse(done.createdAt));

    const audit = await auditOf(api, shop.user.token, created.body.id);
    expect(audit.map((entry) => entry.action)).toEqual(['sync_job.created', 'sync_job.completed']);
    expect(audit[0]).toMatchObject({ resellerStoreId: shop.reseller.id, resourceType: 'sync_job', metadata: { origin: 'manual' } });
    expect(audit[0].actorId).toMatch(/^usr_/);
    expect(audit[1]).toMatchObject({ actorId: 'system', metadata: { sourceOrderId: done.sourceOrderId } });
  });

  it('prices a field_rules store rule by rule, in order, on the store’s own platform', async ({ api, sandbox }) => {
    const orderId = seedResellerOrder(sandbox, shop, [
      { sku: 'A1', title: 'Anvil', vendor: 'Acme', quantity: 1, price: '12.50' },
      { sku: 'B1', title: 'Bolt', vendor: 'bolt co', quantity: 3, price: '2.00' },
      { sku: 'B2', title: 'Nut', vendor: 'Bolt Co', quantity: 10, price: '0.99' },
    ]);
    const job = await createJob(api, shop.user.token, bolts.id, orderId);
    const done = await settled(api, shop.user.token, job.id);
    expect(done.status).toBe('completed');

    const orders = sandbox.ordersFor(bolts.shopDomain).filter((order) => order.idempotencyKey === `sync-job:${job.id}`);
    expect(orders).toHaveLength(1);
    // 200 × 0.8 − 50 = 110; 99 × 0.8 = 79.2 -> 79, − 50 = 29.
    expect((orders[0]!.body as any).order).toMatchObject({
      line_items: [
        { sku: 'SUP-B1', title: 'Bolt (wholesale)', quantity: 3, price: '1.10' },
        { sku: 'SUP-B2', title: 'Nut (wholesale)', quantity: 10, price: '0.29' },
      ],
      note_attributes: expect.arrayContaining([{ name: 'sync_reference', value: job.id }]),
    });
    expect(done.sourceOrderId).toBe(String(orders[0]!.id));
  });

  it('is idempotent: the same order and source store answer 200 with the same job, and nothing runs twice', async ({ service, api, sandbox }) => {
    const orderId = seedResellerOrder(sandbox, shop, [lineOf('Acme')]);
    const first = await createJob(api, shop.user.token, acme.id, orderId);
    await settled(api, shop.user.token, first.id);

    const again = await api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: acme.id, external_order_id: orderId } });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ id: first.id, status: 'completed', attempts: 1 });

    const listed = await api.get(`/v1/sync_jobs?external_order_id=${orderId}`, { token: shop.user.token });
    expect(listed.body.data.map((job: { id: string }) => job.id)).toEqual([first.id]);
    // No second queue message was ever sent for the job, so no second order can come.
    expect(await messagesOfJob(service.databaseUrl, first.id)).toHaveLength(1);
    expect(sandbox.ordersFor(acme.shopDomain).filter((order) => order.idempotencyKey === `sync-job:${first.id}`)).toHaveLength(1);
    const audit = await auditOf(api, shop.user.token, first.id);
    expect(audit.filter((entry) => entry.action === 'sync_job.created')).toHaveLength(1);
  });

  it('concurrent identical POSTs make one job: one 201, the rest 200 with it', async ({ service, api, sandbox }) => {
    const orderId = seedResellerOrder(sandbox, shop, [lineOf('Acme')]);
    const responses = await Promise.all(
      Array.from({ length: 8 }, () =>
        api.post('/v1/sync_jobs', { token: shop.user.token, body: { source_store_id: acme.id, external_order_id: orderId } }),
      ),
    );
    expect(responses.map((response) => response.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    const ids = new Set(responses.map((response) => response.body.id));
    expect(ids.size).toBe(1);
    const [id] = ids;
    await settled(api, shop.user.token, id!);
    expect(sandbox.ordersFor(acme.shopDomain).filter((order) => order.idempotencyKey === `sync-job:${id}`)).toHaveLength(1);
    expect(await messagesOfJob(service.databaseUrl, id!)).toHaveLength(1);
  });

  it('one order for two suppliers makes one job and one order per supplier', async ({ api, sandbox }) => {
    const orderId = seedResellerOrder(sandbox, shop, [lineOf('Acme'), lineOf('Bolt Co')]);
    const [a, b] = await Promise.all([
      createJob(api, shop.user.token, acme.id, orderId),
      createJob(api, shop.user.token, bolts.id, orderId),
    ]);
    expect(a.id).not.toBe(b.id);
    const [doneA, doneB] = await Promise.all([settled(api, shop.user.token, a.id), settled(api, shop.user.token, b.id)]);
    expect([doneA.status, doneB.status]).toEqual(['completed', 'completed']);
    expect(sandbox.ordersFor(acme.shopDomain).filter((order) => order.idempotencyKey === `sync-job:${a.id}`)).toHaveLength(1);
    expect(sandbox.ordersFor(bolts.shopDomain).filter((order) => order.idempotencyKey === `sync-job:${b.id}`)).toHaveLength(1);
  });
});

describe('POST /v1/sync_jobs validation', () => {
  let shop: Shop;
  let supplier: Supplier;
  it.beforeAll(async ({ api }) => {
    shop = await openShop(api);
    supplier = await addSupplier(api, shop);
  });

  const post = (api: ApiClient, body: unknown, token = shop.user.token) => api.post('/v1/sync_jobs', { token, body });

  it('rejects a non-numeric external_order_id', async ({ api }) => {
    for (const external_order_id of ['abc', '12a', '', '-5', '1.5', ' 12']) {
      expectError(await post(api, { source_store_id: supplier.id, external_order_id }), 400, 'validation_failed', 'external_order_id');
    }
    expectError(await post(api, { source_store_id: supplier.id, external_order_id: 4501 }), 400, 'validation_failed', 'external_order_id');
  });

  it('rejects a missing field', async ({ api }) => {
    expectError(await post(api, { external_order_id: '4501' }), 400, 'validation_failed', 'source_store_id');
    expectError(await post(api, { source_store_id: supplier.id }), 400, 'validation_failed', 'external_order_id');
  });

  it('rejects an unknown, another user’s, or a deleted source store alike', async ({ api }) => {
    const orderId = newOrderId();
    expectError(await post(api, { source_store_id: 'sst_00000000000000000000000000', external_order_id: orderId }), 400, 'validation_failed', 'source_store_id');

    const stranger = await openShop(api);
    const theirs = await addSupplier(api, stranger);
    expectError(await post(api, { source_store_id: theirs.id, external_order_id: orderId }), 400, 'validation_failed', 'source_store_id');

    const doomed = await addSupplier(api, shop);
    const removed = await api.delete(`/v1/reseller_stores/${shop.reseller.id}/source_stores/${doomed.id}`, { token: shop.user.token });
    expect(removed.status).toBe(204);
    expectError(await post(api, { source_store_id: doomed.id, external_order_id: orderId }), 400, 'validation_failed', 'source_store_id');

    // None of them made a job, for either user.
    for (const token of [shop.user.token, stranger.user.token]) {
      const listed = await api.get(`/v1/sync_jobs?external_order_id=${orderId}`, { token });
      expect(listed.body.data).toEqual([]);
    }
  });

  it('answers a repeat with the existing job after its source store was deleted (idempotent), and nothing new', async ({ api }) => {
    const deletedLater = await addSupplier(api, shop);
    const orderId = newOrderId();
    const first = await post(api, { source_store_id: deletedLater.id, external_order_id: orderId });
    expect(first.status).toBe(201);
    const removed = await api.delete(`/v1/reseller_stores/${shop.reseller.id}/source_stores/${deletedLater.id}`, { token: shop.user.token });
    expect(removed.status).toBe(204);
    // The repeat (a retry after a timeout), with the order id written as the storefront numbers it or not.
    for (const written of [orderId, `00${orderId}`]) {
      const repeat = await post(api, { source_store_id: deletedLater.id, external_order_id: written });
      expect(repeat.status).toBe(200);
      expect(repeat.body).toMatchObject({ id: first.body.id, sourceStoreId: deletedLater.id, externalOrderId: orderId });
    }
    // Another order of the deleted store is still refused, and another user gets nothing of it.
    expectError(await post(api, { source_store_id: deletedLater.id, external_order_id: newOrderId() }), 400, 'validation_failed', 'source_store_id');
    const stranger = await openShop(api);
    expectError(await post(api, { source_store_id: deletedLater.id, external_order_id: orderId }, stranger.user.token), 400, 'validation_failed', 'source_store_id');
    const listed = await api.get(`/v1/sync_jobs?external_order_id=${orderId}`, { token: shop.user.token });
    expect(listed.body.data.map((job: { id: string }) => job.id)).toEqual([first.body.id]);
  });
});

describe('POST /v1/sync_jobs/{id}/retry refusals', () => {
  let shop: Shop;
  let supplier: Supplier;
  it.beforeAll(async ({ api }) => {
    shop = await openShop(api);
    supplier = await addSupplier(api, shop);
  });

  it('refuses a processing job and a completed one with sync_job_not_retryable', async ({ api, sandbox }) => {
    // The supplier holds the order POST until the test releases it: the job is processing until then.
    sandbox.setFaults(supplier.shopDomain, { holdRequestsNext: 1 });
    const orderId = seedResellerOrder(sandbox, shop, [lineOf(supplier.vendorTag)]);
    const job = await createJob(api, shop.user.token, supplier.id, orderId);
    await waitFor(async () => sandbox.heldRequestCount(supplier.shopDomain) === 1, 15_000, 'the order POST to be held');
    expect(await getJob(api, shop.user.token, job.id)).toMatchObject({ status: 'processing' });
    const whileProcessing = await api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token });
    expectError(whileProcessing, 400, 'sync_job_not_retryable');
    expect(whileProcessing.body.error.details).toEqual({ status: 'processing' });

    expect(sandbox.releaseRequests(supplier.shopDomain)).toBe(1);
    const done = await settled(api, shop.user.token, job.id);
    sandbox.clearFaults(supplier.shopDomain);
    expect(done.status).toBe('completed');
    const whenCompleted = await api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token });
    expectError(whenCompleted, 400, 'sync_job_not_retryable');
    expect(await getJob(api, shop.user.token, job.id)).toMatchObject({ status: 'completed', attempts: 1 });
    expect((await auditOf(api, shop.user.token, job.id)).map((entry) => entry.action)).not.toContain('sync_job.retried');
  });

  it('answers 404 not_found for an unknown job and for another user’s job', async ({ api, sandbox }) => {
    expectError(await api.post('/v1/sync_jobs/job_00000000000000000000000000/retry', { token: shop.user.token }), 404, 'not_found');
    const orderId = seedResellerOrder(sandbox, shop, [lineOf(supplier.vendorTag)]);
    const job = await createJob(api, shop.user.token, supplier.id, orderId);
    const stranger = await registerUser(api);
    const theirs = await api.post(`/v1/sync_jobs/${job.id}/retry`, { token: stranger.token });
    const missing = await api.post('/v1/sync_jobs/job_00000000000000000000000000/retry', { token: stranger.token });
    expectError(theirs, 404, 'not_found');
    expect(theirs.body.error).toEqual(missing.body.error);
    expectError(await api.get(`/v1/sync_jobs/${job.id}`, { token: stranger.token }), 404, 'not_found');
  });
});

describe('GET /v1/sync_jobs', () => {
  let shop: Shop;
  let otherReseller: Shop['reseller'];
  let acme: Supplier;
  let bolts: Supplier;
  let broken: Supplier;
  const jobs: Record<string, any> = {};

  it.beforeAll(async ({ api, sandbox }) => {
    shop = await openShop(api);
    otherReseller = (await openShop(api, {}, shop.user)).reseller;
    const second: Shop = { user: shop.user, reseller: otherReseller };
    acme = await addSupplier(api, shop, { vendorTag: 'Acme' });
    bolts = await addSupplier(api, shop, { vendorTag: 'Bolts' });
    broken = await addSupplier(api, second, { vendorTag: 'Acme' });
    sandbox.setFaults(broken.shopDomain, { alwaysFail: true });

    const order1 = seedResellerOrder(sandbox, shop, [lineOf('Acme'), lineOf('Bolts')]);
    const order2 = seedResellerOrder(sandbox, shop, [lineOf('Acme')]);
    const order3 = seedResellerOrder(sandbox, second, [lineOf('Acme')]);
    // Created one after another, so their ids (time-sortable) are in this order.
    jobs.a1 = await createJob(api, shop.user.token, acme.id, order1);
    jobs.b1 = await createJob(api, shop.user.token, bolts.id, order1);
    jobs.a2 = await createJob(api, shop.user.token, acme.id, order2);
    jobs.x3 = await createJob(api, shop.user.token, broken.id, order3);
    for (const key of Object.keys(jobs)) jobs[key] = await settled(api, shop.user.token, jobs[key].id);
  });

  const list = (api: ApiClient, query: string, token = shop.user.token) => api.get(`/v1/sync_jobs?${query}`, { token });
  const idsOf = async (api: ApiClient, query: string) => {
    const response = await list(api, query);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data.map((job: { id: string }) => job.id);
  };

  it('lists the user’s jobs newest first in the list envelope', async ({ api }) => {
    const response = await list(api, 'limit=100');
    expect(response.body).toMatchObject({ object: 'list', has_more: false, url: '/v1/sync_jobs' });
    expect(response.body.request_id).toBe(response.headers.get('x-request-id'));
    expect(response.body.data.map((job: { id: string }) => job.id)).toEqual([jobs.x3.id, jobs.a2.id, jobs.b1.id, jobs.a1.id]);
    expect(response.body.data[0]).toEqual({ ...jobs.x3, fulfillments: undefined, cancellations: undefined, request_id: undefined });
  });

  it('filters by status, reseller store, source store and external order id, alone and together', async ({ api }) => {
    expect(jobs.x3.status).toBe('dead');
    expect(await idsOf(api, 'status=dead')).toEqual([jobs.x3.id]);
    expect(await idsOf(api, 'status=completed')).toEqual([jobs.a2.id, jobs.b1.id, jobs.a1.id]);
    expect(await idsOf(api, 'status=pending')).toEqual([]);
    expect(await idsOf(api, `reseller_store_id=${shop.reseller.id}`)).toEqual([jobs.a2.id, jobs.b1.id, jobs.a1.id]);
    expect(await idsOf(api, `reseller_store_id=${otherReseller.id}`)).toEqual([jobs.x3.id]);
    expect(await idsOf(api, `source_store_id=${acme.id}`)).toEqual([jobs.a2.id, jobs.a1.id]);
    expect(await idsOf(api, `external_order_id=${jobs.a1.externalOrderId}`)).toEqual([jobs.b1.id, jobs.a1.id]);
    expect(await idsOf(api, `external_order_id=${jobs.a1.externalOrderId}&source_store_id=${bolts.id}`)).toEqual([jobs.b1.id]);
    expect(await idsOf(api, `status=dead&reseller_store_id=${shop.reseller.id}`)).toEqual([]);
    expectError(await list(api, 'status=stuck'), 400, 'validation_failed', 'status');
  });

  it('pages with starting_after and ending_before', async ({ api }) => {
    const all = [jobs.x3.id, jobs.a2.id, jobs.b1.id, jobs.a1.id];
    expect(await allIds((query) => list(api, query), 1)).toEqual(all);
    const first = await list(api, 'limit=3');
    expect(first.body.has_more).toBe(true);
    expect(first.body.data.map((job: { id: string }) => job.id)).toEqual(all.slice(0, 3));
    const second = await list(api, `limit=3&starting_after=${all[2]}`);
    expect(second.body).toMatchObject({ has_more: false });
    expect(second.body.data.map((job: { id: string }) => job.id)).toEqual([all[3]]);
    const back = await list(api, `limit=2&ending_before=${all[3]}`);
    expect(back.body.data.map((job: { id: string }) => job.id)).toEqual(all.slice(1, 3));
    expect(back.body.has_more).toBe(true);
    expect(await idsOf(api, `source_store_id=${acme.id}&limit=1&starting_after=${jobs.a2.id}`)).toEqual([jobs.a1.id]);
  });

  it('shows another user none of them, whatever the filter', async ({ api }) => {
    const stranger = await registerUser(api);
    for (const query of ['', `reseller_store_id=${shop.reseller.id}`, `source_store_id=${acme.id}`, `external_order_id=${jobs.a1.externalOrderId}`, 'status=completed']) {
      const response = await list(api, query, stranger.token);
      expect(response.status).toBe(200);
      expect(response.body.data, query).toEqual([]);
    }
  });
});

/**
 * The retry endpoint accepts exactly the jobs the lifecycle machine lets take RETRY. The machine's
 * own table is unit-tested in machines/; this checks the endpoint is wired to it, for a job in each
 * status. The jobs are moved with the same `transitionJob` the workers use, on a service without
 * workers, so nothing else moves them meanwhile.
 */
describe('the retry endpoint follows the machine (canApply RETRY)', () => {
  let apiOnly: TestService;
  it.beforeAll(async ({ sandbox }) => {
    apiOnly = await startTestService({ ROLE: 'api', PLATFORM_BASE_URL: sandbox.baseUrlTemplate });
  });
  afterAll(async () => {
    await apiOnly?.stop();
  });

  const FAIL = (at: string) => ({ type: 'FAIL' as const, error: 'boom', at });
  const paths: Record<string, ((at: string) => Parameters<typeof transitionJob>[1])[]> = {
    pending: [],
    processing: [(at) => ({ type: 'TAKE', at })],
    completed: [(at) => ({ type: 'TAKE', at }), (at) => ({ type: 'SUCCEED', at, sourceOrderId: 'ord_1' })],
    failed: [(at) => ({ type: 'TAKE', at }), FAIL],
    dead: Array.from({ length: 4 }, () => [(at: string) => ({ type: 'TAKE' as const, at }), FAIL]).flat(),
  };

  it.each(Object.keys(paths))('a %s job', async (status) => {
    const shop = await openShop(apiOnly.api);
    const supplier = await addSupplier(apiOnly.api, shop);
    const job = await createJob(apiOnly.api, shop.user.token, supplier.id, newOrderId());

    const em = apiOnly.ctx.orm.em.fork();
    const row = await em.findOneOrFail(SyncJob, { id: job.id });
    for (const event of paths[status]!) {
      const now = new Date();
      expect(transitionJob(row, event(now.toISOString()), now)).toBe(true);
    }
    await em.flush();
    expect(row.status).toBe(status);

    const retryable = canApply(persistedOf(row), { type: 'RETRY', at: new Date().toISOString() });
    const response = await apiOnly.api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token });
    if (retryable) {
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body).toMatchObject({ status: 'pending', attempts: row.attempts, errorMessage: null, failedAt: null, deadAt: null });
    } else {
      expectError(response, 400, 'sync_job_not_retryable');
      expect(await getJob(apiOnly.api, shop.user.token, job.id)).toMatchObject({ status, attempts: row.attempts });
    }
    expect(retryable).toBe(status === 'failed' || status === 'dead');
  });
});
