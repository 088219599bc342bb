/**
 * Cancellations reach suppliers (issue 23, order-changes.md): a storefront cancellation becomes one
 * cancellation per affected sync job, whose outcome is decided by where the supplier order stands;
 * a supplier's own cancellation is recorded on its job. Real service, queue, database and sandbox.
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { buildFulfillmentPayload, sendWebhook, type Faults, type OrderLineInput } from './sandbox/server.ts';
import { expectError } from './support/assertions.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { auditOf, getJob, waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });

let nextOrderId = 2_300_000 + Math.floor(Math.random() * 10_000) * 10;

interface Store {
  id: string;
  shopDomain: string;
  platform: Platform;
  secret: string;
}

interface Shop {
  user: TestUser;
  reseller: Store;
  supplier: Store;
}

const PLATFORMS: Platform[] = ['platform_a', 'platform_b', 'custom'];
const ANVIL: OrderLineInput = { sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 2, price: '25.00' };
const BELL: OrderLineInput = { sku: 'B-1', title: 'Bell', vendor: 'Acme', quantity: 3, price: '5.00' };

const finished = (job: any) => job.cancellations.length > 0 && job.cancellations.every((c: any) => c.status === 'completed' || c.status === 'dead');

const it = test
  .extend('shopWith', { scope: 'file' }, ({ api }) => async (resellerPlatform: Platform, supplierPlatform: Platform): Promise<Shop> => {
    const user = await registerUser(api);
    const resellerSecret = `whsec_reseller_${uniqueSuffix()}`;
    const reseller = await createResellerStore(api, user.token, { platform: resellerPlatform, webhookSecret: resellerSecret });
    const supplierSecret = `whsec_supplier_${uniqueSuffix()}`;
    const supplier = await createSourceStore(api, user.token, reseller.id, { platform: supplierPlatform, vendorTag: 'Acme', webhookSecret: supplierSecret });
    return { user, reseller: { ...reseller, secret: resellerSecret }, supplier: { ...supplier, secret: supplierSecret } };
  })
  .extend('newOrder', { scope: 'file' }, ({ sandbox }) => (shop: Shop, lines: OrderLineInput[] = [ANVIL]) => {
    const id = shop.reseller.platform === 'custom' ? `ord_${nextOrderId++}` : nextOrderId++;
    const payload = sandbox.buildOrderPayload(shop.reseller.platform, { id, lines });
    sandbox.seedOrder(shop.reseller.shopDomain, shop.reseller.platform, payload);
    return payload as Record<string, any>;
  })
  .extend('storefront', { scope: 'file' }, ({ service }) => (shop: Shop, topic: string, payload: unknown, webhookId?: string) =>
    sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: shop.reseller.shopDomain, secret: shop.reseller.secret, topic, payload, ...(webhookId && { webhookId }) }))
  .extend('supplierSends', { scope: 'file' }, ({ service }) => (shop: Shop, topic: string, payload: unknown) =>
    sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.supplier.shopDomain, secret: shop.supplier.secret, topic, payload }))
  /** Routes an order and waits until its job ends (placed, or dead when the supplier keeps failing). */
  .extend('routed', { scope: 'file' }, ({ api, sandbox, newOrder, storefront }) => async (shop: Shop, faults: Faults = {}, lines?: OrderLineInput[]) => {
    sandbox.setFaults(shop.supplier.shopDomain, faults);
    const order = newOrder(shop, lines);
    const response = await storefront(shop, 'orders/create', order);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const jobId = (response.body as { syncJobIds: string[] }).syncJobIds[0]!;
    const job = await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed' || j.status === 'dead', 20_000);
    sandbox.clearFaults(shop.supplier.shopDomain);
    return { order, jobId, job };
  });

/** The calls the supplier received about one of its orders since it was created: method and answer. */
function callsOn(sandbox: { requestsFor: (shopDomain: string) => { method: string; path: string; status: number | null }[] }, shop: Shop, sourceOrderId: string) {
  return sandbox
    .requestsFor(shop.supplier.shopDomain)
    .filter((request) => request.path.includes(`/${sourceOrderId}`))
    .map(({ method, status }) => ({ method, status }));
}

/** The storefront's whole-order cancellation, as each reseller platform sends it. */
function wholeOrderCancellation(platform: Platform, order: Record<string, any>): { topic: string; payload: unknown } {
  if (platform === 'platform_a') return { topic: 'orders/cancelled', payload: { ...order, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' } };
  if (platform === 'platform_b') return { topic: 'orders/updated', payload: { ...order, status: 'cancelled' } };
  return { topic: 'orders/cancelled', payload: { id: order.id, cancelledAt: new Date().toISOString(), reason: 'customer' } };
}

async function cancelWhole(storefront: (shop: Shop, topic: string, payload: unknown) => Promise<{ status: number; body: unknown }>, shop: Shop, order: Record<string, any>) {
  const { topic, payload } = wholeOrderCancellation(shop.reseller.platform, order);
  const response = await storefront(shop, topic, payload);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  expect(response.body).toMatchObject({ received: true });
  return response.body as { syncJobIds: string[] };
}

describe('a whole-order cancellation', () => {
  for (const supplierPlatform of PLATFORMS) {
    const resellerPlatform = PLATFORMS[(PLATFORMS.indexOf(supplierPlatform) + 1) % 3]!;
    it(`cancels a placed ${supplierPlatform} order once (storefront on ${resellerPlatform}): cancelled`, async ({ api, sandbox, shopWith, routed, storefront }) => {
      const shop = await shopWith(resellerPlatform, supplierPlatform);
      const { order, jobId, job: placed } = await routed(shop);
      expect(placed.cancellations).toEqual([]);
      const answer = await cancelWhole(storefront, shop, order);
      expect(answer.syncJobIds).toEqual([jobId]);
      const job = await waitForJob(api, shop.user.token, jobId, finished);
      // One call to the supplier: the cancel itself, no read of the order before it; platform_b's
      // cancel sets the status whatever it was, so its order is read first, with its shipment
      // trackings beside it (an open order can carry some: shipped, it must not be reported stopped).
      expect(callsOn(sandbox, shop, placed.sourceOrderId)).toEqual(
        supplierPlatform === 'platform_b' ? [{ method: 'GET', status: 200 }, { method: 'GET', status: 200 }, { method: 'PUT', status: 200 }] : [{ method: 'POST', status: 200 }],
      );
      expect(job.status).toBe('completed');
      expect(job.sourceOrderId).toBe(placed.sourceOrderId);
      expect(job.cancellations).toHaveLength(1);
      expect(job.cancellations[0]).toMatchObject({
        id: expect.stringMatching(/^can_/),
        status: 'completed',
        outcome: 'cancelled',
        scope: 'order',
        lines: [{ sku: 'A-1', quantity: 2 }],
        reason: null,
        attempts: 1,
        errorMessage: null,
        timeline: [expect.objectContaining({ attempt: 1, trigger: 'initial', outcome: 'succeeded', cancellationOutcome: 'cancelled', platformStatus: 200 })],
      });
      expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toMatchObject([{ orderId: placed.sourceOrderId, lines: null }]);
      // A redelivery of the same signal changes nothing.
      const { topic, payload } = wholeOrderCancellation(resellerPlatform, order);
      await storefront(shop, topic, payload);
      const again = await getJob(api, shop.user.token, jobId);
      expect(again.cancellations).toHaveLength(1);
      const audit = await auditOf(api, shop.user.token, job.cancellations[0].id);
      expect(audit.map((entry) => entry.action)).toEqual(expect.arrayContaining(['cancellation.requested', 'cancellation.completed']));
      expect(audit.find((entry) => entry.action === 'cancellation.completed').metadata).toMatchObject({ outcome: 'cancelled' });
      const orderAudit = await auditOf(api, shop.user.token, String(order.id));
      expect(orderAudit.filter((entry) => entry.action === 'order.cancelled')).toHaveLength(2);
      expect(orderAudit.find((entry) => entry.action === 'order.cancelled').metadata).toMatchObject({ routed: true, scope: 'order' });
    });

    it(`is too late for a shipped ${supplierPlatform} order: too_late, named in the reason`, async ({ api, sandbox, shopWith, routed, storefront }) => {
      const shop = await shopWith(resellerPlatform, supplierPlatform);
      const { order, jobId, job: placed } = await routed(shop);
      sandbox.fulfilLines(shop.supplier.shopDomain, supplierPlatform, placed.sourceOrderId);
      await cancelWhole(storefront, shop, order);
      const job = await waitForJob(api, shop.user.token, jobId, finished);
      expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'too_late', reason: expect.stringContaining('A-1') });
      expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toEqual([]);
      // The cancel call, refused; then the read of the order that says why (platform_b: the read
      // first, and no cancel call for an order it shows shipped).
      const refusedWith = supplierPlatform === 'custom' ? 409 : 422;
      expect(callsOn(sandbox, shop, placed.sourceOrderId)).toEqual(
        supplierPlatform === 'platform_b' ? [{ method: 'GET', status: 200 }, { method: 'GET', status: 200 }] : [{ method: 'POST', status: refusedWith }, { method: 'GET', status: 200 }],
      );
      const events = await api.get(`/v1/events?type=cancellation.too_late&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
      expect(events.body.data).toHaveLength(1);
      expect(events.body.data[0].data.object).toMatchObject({ id: jobId, cancellations: [expect.objectContaining({ outcome: 'too_late' })] });
      // The reseller's to-do list holds it, written with the outcome.
      const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
      expect(todo.body.data).toMatchObject([{ type: 'too_late', syncJobId: jobId, subjectId: job.cancellations[0].id, status: 'open' }]);
    });

    it(`never places a dead ${supplierPlatform} job of a cancelled order: completed without an order, not_placed, not retryable`, async ({ api, service, sandbox, shopWith, routed, storefront, supplierSends }) => {
      const shop = await shopWith(resellerPlatform, supplierPlatform);
      // Refused outright (422), so no order exists: the lookup by reference finds none.
      const { order, jobId, job: dead } = await routed(shop, { alwaysFail: true, status: 422 });
      expect(dead.status).toBe('dead');
      const todoOf = async () => (await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data;
      expect(await todoOf()).toMatchObject([{ type: 'job_dead', syncJobId: jobId }]);
      await cancelWhole(storefront, shop, order);
      const job = await waitForJob(api, shop.user.token, jobId, finished);
      expect(job).toMatchObject({ status: 'completed', sourceOrderId: null });
      expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'not_placed' });
      // Its sync_job.completed (voided) shows the cancellation that voided it.
      const completed = await api.get(`/v1/events?type=sync_job.completed&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
      const voided = completed.body.data.find((event: any) => event.data.object.id === jobId);
      expect(voided.data.object).toMatchObject({ status: 'completed', sourceOrderId: null, cancellations: [{ id: job.cancellations[0].id, scope: 'order' }] });
      expectError(await api.post(`/v1/sync_jobs/${jobId}/retry`, { token: shop.user.token }), 400, 'sync_job_not_retryable');
      // Nothing is left to retry, so the reseller's to-do list no longer asks for it.
      expect(await todoOf()).toEqual([]);
      // Nor could it own an order now: the supplier's own sales are not held for it.
      const ownSale = await supplierSends(shop, 'fulfillments/create', buildFulfillmentPayload(supplierPlatform, { orderId: '987654321', trackingNumbers: ['OWN'] }));
      expect(ownSale.body).toMatchObject({ syncJobIds: [] });
      expect(await queryRows(service.databaseUrl, 'select id from held_fulfillments where source_store_id = $1', [shop.supplier.id])).toEqual([]);
      expect(sandbox.ordersFor(shop.supplier.shopDomain)).toEqual([]);
      expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toEqual([]);
    });
  }

  it('finds an order whose answer was lost by its reference, never by creating it, cancels it and records it on the job: shipped anyway, its tracking is pushed and the cancellation is too_late', async ({ api, service, sandbox, shopWith, newOrder, storefront, supplierSends }) => {
    const shop = await shopWith('platform_a', 'custom');
    // Every answer lost: the supplier holds the order, the job never learns it and dies.
    sandbox.setFaults(shop.supplier.shopDomain, { acceptThenDropNext: 4 });
    const order = newOrder(shop);
    const routedAnswer = await storefront(shop, 'orders/create', order);
    const jobId = (routedAnswer.body as { syncJobIds: string[] }).syncJobIds[0]!;
    await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'dead', 20_000);
    sandbox.clearFaults(shop.supplier.shopDomain);
    const held = sandbox.ordersFor(shop.supplier.shopDomain);
    expect(held).toHaveLength(1);
    await cancelWhole(storefront, shop, order);
    const job = await waitForJob(api, shop.user.token, jobId, finished);
    const found = String(held[0]!.id);
    expect(job).toMatchObject({ status: 'completed', sourceOrderId: found });
    expect(job.cancellations[0]).toMatchObject({ outcome: 'cancelled' });
    expect(sandbox.ordersFor(shop.supplier.shopDomain)).toHaveLength(1);
    expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toMatchObject([{ orderId: found }]);
    // The order found is in the job's history.
    expect((await auditOf(api, shop.user.token, jobId)).filter((entry) => entry.action === 'sync_job.order_found')).toMatchObject([
      { actorId: 'system', metadata: { sourceOrderId: found, externalOrderId: String(order.id) } },
    ]);
    // The supplier ships it anyway: the fulfillment finds the job, reaches the customer, and the reseller is told.
    const shipped = await supplierSends(shop, 'fulfillments/create', buildFulfillmentPayload('custom', { orderId: found, trackingNumbers: ['SHIPPED-ANYWAY'] }));
    expect(shipped.body).toMatchObject({ syncJobIds: [jobId] });
    const after = await waitForJob(api, shop.user.token, jobId, (j) => j.fulfillments[0]?.status === 'completed');
    expect(after.cancellations[0]).toMatchObject({ outcome: 'too_late' });
    // Nothing of this supplier is in doubt any more: its own sales are not held.
    const ownSale = await supplierSends(shop, 'fulfillments/create', buildFulfillmentPayload('custom', { orderId: 'own-sale-1', trackingNumbers: ['OWN'] }));
    expect(ownSale.body).toMatchObject({ syncJobIds: [] });
    expect(await queryRows(service.databaseUrl, 'select id from held_fulfillments where source_store_id = $1', [shop.supplier.id])).toEqual([]);
  });

  it("resolves the job_dead entry of a job its cancellation's attempt voids (the job was in flight when the signal came)", async ({ api, service, sandbox, shopWith, routed, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, jobId } = await routed(shop, { alwaysFail: true, status: 422 });
    sandbox.clearFaults(shop.supplier.shopDomain);
    const todoOf = async () => (await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data;
    expect(await todoOf()).toMatchObject([{ type: 'job_dead', syncJobId: jobId }]);
    // A manual retry's attempt is in flight when the storefront cancels: the signal leaves the job to its cancellation.
    await queryRows(service.databaseUrl, `update sync_jobs set status = 'processing' where id = $1`, [jobId]);
    expect(await cancelWhole(storefront, shop, order)).toMatchObject({ syncJobIds: [jobId] });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // That attempt dies; the cancellation's attempt then voids the job.
    await queryRows(service.databaseUrl, `update sync_jobs set status = 'dead' where id = $1`, [jobId]);
    const job = await waitForJob(api, shop.user.token, jobId, finished, 30_000);
    expect(job).toMatchObject({ status: 'completed', sourceOrderId: null, cancellations: [{ status: 'completed', outcome: 'not_placed' }] });
    expect(await todoOf()).toEqual([]);
  });

  it('holds the tracking of an order in doubt while its cancellation could not look it up, and gives it to the job once a retry finds the order', async ({ api, service, sandbox, shopWith, newOrder, storefront, supplierSends }) => {
    const shop = await shopWith('platform_a', 'custom');
    sandbox.setFaults(shop.supplier.shopDomain, { acceptThenDropNext: 4 });
    const order = newOrder(shop);
    const jobId = ((await storefront(shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds[0]!;
    await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'dead', 20_000);
    const found = String(sandbox.ordersFor(shop.supplier.shopDomain)[0]!.id);
    // The supplier answers nothing while the cancellation looks the order up: it dies, the job already ended unplaced.
    sandbox.setFaults(shop.supplier.shopDomain, { alwaysFail: true, status: 503 });
    await cancelWhole(storefront, shop, order);
    const dead = await waitForJob(api, shop.user.token, jobId, (j) => j.cancellations[0]?.status === 'dead', 20_000);
    expect(dead).toMatchObject({ status: 'completed', sourceOrderId: null });
    sandbox.clearFaults(shop.supplier.shopDomain);
    // The order existed, and ships: its tracking is held, and outlives the sweeps' forgetting.
    const [shipment] = sandbox.shipOrder(shop.supplier.shopDomain, 'custom', found, { trackingNumbers: ['HELD-TRK'] });
    expect((await supplierSends(shop, 'fulfillments/create', shipment)).body).toMatchObject({ syncJobIds: [] });
    const held = () => queryRows(service.databaseUrl, 'select id from held_fulfillments where source_store_id = $1', [shop.supplier.id]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await held()).toHaveLength(1);
    const retried = await api.post(`/v1/sync_jobs/${jobId}/cancellations/${dead.cancellations[0].id}/retry`, { token: shop.user.token });
    expect(retried.status).toBe(200);
    const job = await waitForJob(api, shop.user.token, jobId, (j) => j.cancellations[0].status === 'completed' && j.fulfillments.length === 1, 20_000);
    expect(job).toMatchObject({ sourceOrderId: found, cancellations: [{ outcome: 'too_late' }] });
    expect(await held()).toEqual([]);
  });

  it('retries a cancel answering 5xx, dies after three retries, and a manual retry completes it', async ({ api, sandbox, shopWith, routed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { order, jobId } = await routed(shop);
    sandbox.setFaults(shop.supplier.shopDomain, { cancelFailNext: 4, cancelStatus: 503 });
    await cancelWhole(storefront, shop, order);
    const dead = await waitForJob(api, shop.user.token, jobId, finished, 20_000);
    expect(dead.cancellations[0]).toMatchObject({ status: 'dead', outcome: null, attempts: 4, errorMessage: expect.stringContaining('503') });
    const cancellationId = dead.cancellations[0].id;
    const todo = () => api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect((await todo()).body.data).toMatchObject([{ type: 'cancellation_dead', syncJobId: jobId, subjectId: cancellationId, status: 'open' }]);
    const retried = await api.post(`/v1/sync_jobs/${jobId}/cancellations/${cancellationId}/retry`, { token: shop.user.token });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.cancellations[0]).toMatchObject({ id: cancellationId, status: 'pending' });
    const job = await waitForJob(api, shop.user.token, jobId, (j) => j.cancellations[0].status === 'completed');
    expect(job.cancellations[0]).toMatchObject({ outcome: 'cancelled', attempts: 5 });
    expect(job.cancellations[0].timeline.map((entry: any) => entry.trigger)).toEqual(['initial', 'automatic_retry', 'automatic_retry', 'automatic_retry', 'manual_retry']);
    // Resolved by the completion: off the to-do list.
    expect((await todo()).body.data).toEqual([]);
    expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toHaveLength(1);
    // Completed: a retry is refused, like a job's; another user's is 404.
    expectError(await api.post(`/v1/sync_jobs/${jobId}/cancellations/${cancellationId}/retry`, { token: shop.user.token }), 400, 'sync_job_not_retryable');
    const stranger = await registerUser(api);
    expectError(await api.post(`/v1/sync_jobs/${jobId}/cancellations/${cancellationId}/retry`, { token: stranger.token }), 404, 'not_found');
    const stats = await api.get(`/v1/reseller_stores/${shop.reseller.id}/stats`, { token: shop.user.token });
    expect(stats.body.cancellations).toEqual({
      byStatus: { pending: 0, processing: 0, completed: 1, failed: 0, dead: 0 },
      byOutcome: { cancelled: 1, not_placed: 0, too_late: 0, unsupported: 0 },
    });
  });

  it('cancels once when the answer to the cancel is lost', async ({ api, sandbox, shopWith, routed, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, jobId } = await routed(shop);
    sandbox.setFaults(shop.supplier.shopDomain, { cancelAcceptThenDropNext: 1 });
    await cancelWhole(storefront, shop, order);
    const job = await waitForJob(api, shop.user.token, jobId, finished);
    expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'cancelled', attempts: 2 });
    expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toHaveLength(1);
  });

  it('records a cancellation that comes before its order, and routes the order as cancelled: nothing reaches the supplier', async ({ api, sandbox, shopWith, newOrder, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const order = newOrder(shop);
    const early = await cancelWhole(storefront, shop, order);
    expect(early.syncJobIds).toEqual([]);
    const audit = await auditOf(api, shop.user.token, String(order.id));
    expect(audit.find((entry) => entry.action === 'order.cancelled').metadata).toMatchObject({ routed: false });
    const created = await storefront(shop, 'orders/create', order);
    const jobId = (created.body as { syncJobIds: string[] }).syncJobIds[0]!;
    const job = await waitForJob(api, shop.user.token, jobId, finished);
    expect(job).toMatchObject({ status: 'completed', sourceOrderId: null, attempts: 0 });
    expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'not_placed' });
    expect(sandbox.ordersFor(shop.supplier.shopDomain)).toEqual([]);
  });

  it('is too late for a platform_b order left processing with shipment tracking no webhook brought: nothing cancelled, the watch pushes the tracking', async ({ api, sandbox, shopWith, routed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { order, jobId, job: placed } = await routed(shop);
    // The supplier adds tracking and leaves the order processing; its fulfillments webhook is lost.
    sandbox.shipOrder(shop.supplier.shopDomain, 'platform_b', placed.sourceOrderId, { trackingNumbers: ['1Z-OPEN-CANCEL'], keepOpen: true });
    expect((sandbox.orderOf(shop.supplier.shopDomain, 'platform_b', placed.sourceOrderId) as any).status).toBe('processing');
    await cancelWhole(storefront, shop, order);
    const job = await waitForJob(api, shop.user.token, jobId, finished);
    // platform_b would have accepted the cancel: the parcel is on its way all the same, so the reseller is told.
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'too_late', reason: expect.stringContaining('already shipped by the supplier: A-1 × 2') }]);
    expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toEqual([]);
    expect((sandbox.orderOf(shop.supplier.shopDomain, 'platform_b', placed.sourceOrderId) as any).status).toBe('processing');
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data).toMatchObject([{ type: 'too_late', syncJobId: jobId }]);
    // The order is still open at the supplier, so a divergence-watch pass reads its trackings and pushes them.
    const pass = await api.post(`/v1/reseller_stores/${shop.reseller.id}/divergence_checks`, { token: shop.user.token });
    expect(pass.status, JSON.stringify(pass.body)).toBe(202);
    const tracked = await waitForJob(api, shop.user.token, jobId, (j) => j.fulfillments.length > 0 && j.fulfillments[0].status === 'completed', 20_000);
    expect(tracked.fulfillments).toMatchObject([{ trackingNumbers: ['1Z-OPEN-CANCEL'] }]);
  });

  it("is too late for a shipped platform_b order whose shipment trackings cannot be read: they matter only for an open order", async ({ api, sandbox, shopWith, routed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { order, jobId, job: placed } = await routed(shop);
    sandbox.fulfilLines(shop.supplier.shopDomain, 'platform_b', placed.sourceOrderId);
    sandbox.setFaults(shop.supplier.shopDomain, { failPathsEnding: '/shipment-trackings' });
    await cancelWhole(storefront, shop, order);
    const job = await waitForJob(api, shop.user.token, jobId, finished);
    sandbox.clearFaults(shop.supplier.shopDomain);
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'too_late', attempts: 1 }]);
    expect(callsOn(sandbox, shop, placed.sourceOrderId)).toEqual(expect.arrayContaining([{ method: 'GET', status: 500 }]));
  });

  it('never cancels an open platform_b order whose shipment trackings cannot be read: it fails and is retried, then cancels', async ({ api, sandbox, shopWith, routed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { order, jobId, job: placed } = await routed(shop);
    sandbox.setFaults(shop.supplier.shopDomain, { failPathsEnding: '/shipment-trackings' });
    await cancelWhole(storefront, shop, order);
    const dead = await waitForJob(api, shop.user.token, jobId, (j) => j.cancellations[0]?.status === 'dead', 20_000);
    expect(dead.cancellations[0]).toMatchObject({ outcome: null, errorMessage: expect.stringContaining('500') });
    expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toEqual([]);
    sandbox.clearFaults(shop.supplier.shopDomain);
    expect((await api.post(`/v1/sync_jobs/${jobId}/cancellations/${dead.cancellations[0].id}/retry`, { token: shop.user.token })).status).toBe(200);
    const job = await waitForJob(api, shop.user.token, jobId, (j) => j.cancellations[0]?.status === 'completed');
    expect(job.cancellations[0]).toMatchObject({ outcome: 'cancelled' });
    expect(sandbox.cancellationsFor(shop.supplier.shopDomain)).toMatchObject([{ orderId: placed.sourceOrderId }]);
  });

  it("leaves a platform_b order its supplier closed as it is: read first, no status written", async ({ api, sandbox, shopWith, routed, storefront }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { order, jobId, job: placed } = await routed(shop);
    // The supplier closed it on its own, no webhook: platform_b's cancel (a PUT of the status) would overwrite what it shows.
    sandbox.cancelOrder(shop.supplier.shopDomain, 'platform_b', placed.sourceOrderId);
    await cancelWhole(storefront, shop, order);
    const job = await waitForJob(api, shop.user.token, jobId, finished);
    expect(job.cancellations).toMatchObject([{ status: 'completed', outcome: 'cancelled', timeline: [expect.objectContaining({ platformStatus: 200 })] }]);
    // The order and its shipment trackings, read together.
    expect(callsOn(sandbox, shop, placed.sourceOrderId)).toEqual([{ method: 'GET', status: 200 }, { method: 'GET', status: 200 }]);
  });
});

describe('topics that ask for nothing', () => {
  it('answers 200 ignored and changes nothing', async ({ api, shopWith, routed, storefront, supplierSends }) => {
    const shop = await shopWith('platform_b', 'platform_a');
    const { order, jobId } = await routed(shop);
    for (const [topic, payload] of [['orders/updated', { ...order, status: 'processing' }], ['products/update', { id: 1 }]] as const) {
      const response = await storefront(shop, topic, payload);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ received: true, ignored: true, request_id: expect.any(String) });
    }
    const fromSupplier = await supplierSends(shop, 'orders/paid', { id: 1 });
    expect(fromSupplier.body).toMatchObject({ received: true, ignored: true });
    expect((await getJob(api, shop.user.token, jobId)).cancellations).toEqual([]);
  });

  it('refuses an order id no order can have (400, as orders/create does), beside a good signal that still lands', async ({ api, shopWith, routed, storefront }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, jobId } = await routed(shop);
    const [bad, good] = await Promise.all([
      storefront(shop, 'orders/cancelled', { id: 'x'.repeat(40), cancelledAt: new Date().toISOString() }),
      storefront(shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() }),
    ]);
    expect(bad.status).toBe(400);
    expect((bad.body as any).error).toMatchObject({ code: 'validation_failed', param: 'id' });
    expect(good.body).toMatchObject({ syncJobIds: [jobId] });
    const refundShop = await shopWith('platform_a', 'custom');
    const refund = { id: 1, order_id: 'x'.repeat(40), refund_line_items: [{ quantity: 1, restock_type: 'cancel', line_item: { sku: 'A-1' } }] };
    const refused = await storefront(refundShop, 'refunds/create', refund);
    expect(refused.status).toBe(400);
    expect((refused.body as any).error).toMatchObject({ code: 'validation_failed', param: 'order_id' });
  });
});

describe("a supplier's own cancellation", () => {
  const ownCancellation = (platform: Platform, sourceOrderId: string) => {
    if (platform === 'platform_a') return { topic: 'orders/cancelled', payload: { id: Number(sourceOrderId), cancelled_at: new Date().toISOString(), cancel_reason: 'inventory' } };
    if (platform === 'platform_b') return { topic: 'orders/updated', payload: { id: Number(sourceOrderId), status: 'cancelled' } };
    return { topic: 'orders/cancelled', payload: { id: sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'out of stock' } };
  };

  for (const supplierPlatform of PLATFORMS) {
    it(`is recorded on the job, with its event, on ${supplierPlatform}; the storefront is unchanged`, async ({ api, sandbox, shopWith, routed, supplierSends }) => {
      const shop = await shopWith('platform_a', supplierPlatform);
      const { jobId, job: placed } = await routed(shop);
      const { topic, payload } = ownCancellation(supplierPlatform, placed.sourceOrderId);
      const response = await supplierSends(shop, topic, payload);
      expect(response.body).toMatchObject({ received: true, syncJobIds: [jobId] });
      const job = await getJob(api, shop.user.token, jobId);
      expect(job.supplierCancelledAt).toEqual(expect.any(String));
      expect(job.supplierCancelReason).toBe(supplierPlatform === 'platform_a' ? 'inventory' : supplierPlatform === 'custom' ? 'out of stock' : null);
      expect(job.status).toBe('completed');
      const events = await api.get(`/v1/events?type=sync_job.supplier_cancelled&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
      expect(events.body.data).toHaveLength(1);
      expect(events.body.data[0].data.object).toMatchObject({ id: jobId, supplierCancelledAt: job.supplierCancelledAt });
      expect((await auditOf(api, shop.user.token, jobId)).map((entry) => entry.action)).toContain('sync_job.supplier_cancelled');
      expect(sandbox.requestsFor(shop.reseller.shopDomain).filter((request) => request.method !== 'GET')).toEqual([]);
    });
  }

  it("is read by each sender's own platform when records sharing the supplier's domain and secret disagree on it", async ({ api, service, routed, supplierSends }) => {
    const shopDomain = `supplier-${uniqueSuffix()}.example.com`;
    const secret = `whsec_shared_${uniqueSuffix()}`;
    // Another tenant added the same supplier with the platform mistaken, and its record verified a delivery first.
    const other = await registerUser(api);
    const otherReseller = await createResellerStore(api, other.token);
    await createSourceStore(api, other.token, otherReseller.id, { platform: 'platform_a', shopDomain, webhookSecret: secret });
    const proof = await sendWebhook({
      targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
      shopDomain,
      secret,
      topic: 'fulfillments/create',
      payload: buildFulfillmentPayload('platform_a', { orderId: 987_000_002, fulfillmentId: 9_900_002, trackingNumbers: ['PROOF'] }),
    });
    expect(proof.status, JSON.stringify(proof.body)).toBe(200);

    const user = await registerUser(api);
    const resellerSecret = `whsec_reseller_${uniqueSuffix()}`;
    const reseller = await createResellerStore(api, user.token, { platform: 'platform_a', webhookSecret: resellerSecret });
    const supplier = await createSourceStore(api, user.token, reseller.id, { platform: 'custom', shopDomain, vendorTag: 'Acme', webhookSecret: secret });
    const shop: Shop = { user, reseller: { ...reseller, secret: resellerSecret }, supplier: { ...supplier, secret } };
    const { jobId, job: placed } = await routed(shop);
    const { topic, payload } = ownCancellation('custom', placed.sourceOrderId);
    const response = await supplierSends(shop, topic, payload);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body).toMatchObject({ received: true, syncJobIds: [jobId] });
    expect(await getJob(api, user.token, jobId)).toMatchObject({ supplierCancelledAt: expect.any(String), supplierCancelReason: 'out of stock' });
  });

  it('is recorded from a platform_b order the supplier refunded, as the divergence watch reads it', async ({ api, shopWith, routed, supplierSends }) => {
    const shop = await shopWith('platform_a', 'platform_b');
    const { jobId, job: placed } = await routed(shop);
    const response = await supplierSends(shop, 'orders/updated', { id: Number(placed.sourceOrderId), status: 'refunded' });
    expect(response.body).toMatchObject({ received: true, syncJobIds: [jobId] });
    expect(await getJob(api, shop.user.token, jobId)).toMatchObject({ supplierCancelledAt: expect.any(String), supplierCancelReason: 'refunded' });
  });

  it('is not the supplier\'s own when the service asked for it: nothing changes', async ({ api, shopWith, routed, storefront, supplierSends }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, jobId, job: placed } = await routed(shop);
    await cancelWhole(storefront, shop, order);
    await waitForJob(api, shop.user.token, jobId, finished);
    const { topic, payload } = ownCancellation('custom', placed.sourceOrderId);
    await supplierSends(shop, topic, payload);
    const job = await getJob(api, shop.user.token, jobId);
    expect(job.supplierCancelledAt).toBeNull();
  });

  it("is not the supplier's own when the service's cancellation of it died asking: the to-do list has that death, not a supplier cancellation", async ({ api, sandbox, shopWith, routed, storefront, supplierSends }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, jobId, job: placed } = await routed(shop);
    sandbox.setFaults(shop.supplier.shopDomain, { cancelFailNext: 4, cancelStatus: 503 });
    await cancelWhole(storefront, shop, order);
    await waitFor(async () => (await getJob(api, shop.user.token, jobId)).cancellations[0]?.status === 'dead', 15_000, 'the cancellation to die');
    // The supplier acts on the request after all, and says so.
    sandbox.cancelOrder(shop.supplier.shopDomain, 'custom', placed.sourceOrderId);
    const { topic, payload } = ownCancellation('custom', placed.sourceOrderId);
    expect((await supplierSends(shop, topic, payload)).body).toMatchObject({ received: true, syncJobIds: [jobId] });
    expect((await getJob(api, shop.user.token, jobId)).supplierCancelledAt).toBeNull();
    const divergences = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(divergences.body.data.map((entry: { type: string }) => entry.type)).toEqual(['cancellation_dead']);
  });
});

describe('a fulfillment for a cancelled part', () => {
  it('is still recorded and pushed, and raises cancellation.too_late', async ({ api, sandbox, shopWith, routed, storefront, supplierSends }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { order, jobId, job: placed } = await routed(shop);
    await cancelWhole(storefront, shop, order);
    await waitForJob(api, shop.user.token, jobId, finished);
    const fulfillment = buildFulfillmentPayload('platform_a', { orderId: placed.sourceOrderId, fulfillmentId: nextOrderId++, trackingNumbers: ['TRACK-LATE'] });
    await supplierSends(shop, 'fulfillments/create', fulfillment);
    const job = await waitForJob(api, shop.user.token, jobId, (j) => j.fulfillments[0]?.status === 'completed');
    expect(job.cancellations[0]).toMatchObject({ outcome: 'too_late' });
    await waitFor(async () => sandbox.fulfillmentsFor(shop.reseller.shopDomain).length === 1, 15_000, 'tracking pushed');
    const events = await api.get(`/v1/events?type=cancellation.too_late&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(events.body.data).toHaveLength(1);
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data).toMatchObject([{ type: 'too_late', syncJobId: jobId, status: 'open' }]);
  });

  it("makes a cancelled order too_late; the supplier's late echo of that cancellation is still the service's own", async ({ api, shopWith, routed, storefront, supplierSends }) => {
    const shop = await shopWith('custom', 'custom');
    const { order, jobId, job: placed } = await routed(shop);
    await cancelWhole(storefront, shop, order);
    await waitForJob(api, shop.user.token, jobId, finished);
    const fulfillment = buildFulfillmentPayload('custom', { orderId: placed.sourceOrderId, trackingNumbers: ['TRACK-ECHO'] });
    await supplierSends(shop, 'fulfillments/create', fulfillment);
    await waitForJob(api, shop.user.token, jobId, (j) => j.cancellations[0]?.outcome === 'too_late');
    // The supplier's webhook for the cancellation it had accepted, arriving late.
    const echo = await supplierSends(shop, 'orders/cancelled', { id: placed.sourceOrderId, cancelledAt: new Date().toISOString() });
    expect(echo.body).toMatchObject({ received: true, syncJobIds: [jobId] });
    expect((await getJob(api, shop.user.token, jobId)).supplierCancelledAt).toBeNull();
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data.map((entry: { type: string }) => entry.type)).toEqual(['too_late']);
  });

  it('arriving while the cancel call is in flight (the cancellation still processing) makes it too_late once the supplier answers', async ({ api, sandbox, shopWith, routed, storefront, supplierSends }) => {
    const shop = await shopWith('platform_a', 'platform_a');
    const { order, jobId, job: placed } = await routed(shop);
    sandbox.setFaults(shop.supplier.shopDomain, { holdRequestsNext: 1 });
    await cancelWhole(storefront, shop, order);
    await waitFor(async () => sandbox.heldRequestCount(shop.supplier.shopDomain) === 1, 15_000, 'the cancel call to reach the supplier');
    // Recorded while the cancellation is processing: the fulfillment's own check finds nothing to mark.
    const fulfillment = buildFulfillmentPayload('platform_a', { orderId: placed.sourceOrderId, fulfillmentId: nextOrderId++, trackingNumbers: ['TRACK-RACE'] });
    await supplierSends(shop, 'fulfillments/create', fulfillment);
    expect((await getJob(api, shop.user.token, jobId)).cancellations[0]).toMatchObject({ status: 'processing' });
    expect(sandbox.releaseRequests(shop.supplier.shopDomain)).toBe(1);
    const job = await waitForJob(api, shop.user.token, jobId, finished);
    expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'too_late', reason: expect.stringContaining('shipped') });
    const events = await api.get(`/v1/events?type=cancellation.too_late&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(events.body.data).toHaveLength(1);
    const todo = await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    expect(todo.body.data).toMatchObject([{ type: 'too_late', syncJobId: jobId, subjectId: job.cancellations[0].id, status: 'open' }]);
  });
});
