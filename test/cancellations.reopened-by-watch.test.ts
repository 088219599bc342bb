/**
 * A job whose placement answer was lost, whose whole storefront order is then cancelled, is ended
 * unplaced when its cancellation's lookup by reference finds nothing (`not_placed`). A supplier list
 * that does not show the order (here: the order's creation time is before the job's, so a list of
 * the orders created since the job leaves it out) makes the lookup miss an order that exists. While
 * that order is still open at the supplier, nothing cancelled it: the supplier would ship an order
 * the customer cancelled. A divergence-watch pass that lists it (its reference names the job)
 * records it on the job and asks for a new whole-order cancellation, which cancels it at the
 * supplier through the normal retried work. Should the supplier ship while that cancellation is
 * being made, the shipment is reported once, by it (`cancellation.too_late`), not a second time on
 * the cancellation that missed the order.
 */
import { expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { sendWebhook, type Sandbox } from './sandbox/server.ts';
import type { ApiClient } from './support/api.ts';
import { ANVIL, createShop, placeWithAnswerLost, sendStorefrontWebhook, settled, type Shop } from './support/cancellations.ts';
import { test } from './support/fixtures.ts';
import { auditOf, waitForJob } from './support/sync-jobs.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';
import { check, type Tenant } from './support/watch.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '300', RECONCILE_INTERVAL_MS: '0', DIVERGENCE_INTERVAL_MS: '0' });
const it = test;

let nextOrderId = 5_370_000 + Math.floor(Math.random() * 10_000) * 10;

it('a pass that lists the still-open supplier order of a job whose cancellation ended not_placed records it on the job and cancels it at the supplier', async ({ api, sandbox, service }) => {
  const { shop, jobId, sourceOrderId, ended, tenant } = await cancellationMissedTheOrder({ api, sandbox, service });
  // The order is still open at the supplier: it would be shipped.
  expect(sandbox.orderOf(shop.acme.shopDomain, 'custom', sourceOrderId)?.status).not.toBe('cancelled');

  const pass = await check(tenant);
  expect(pass).toMatchObject({ status: 'succeeded', error: null });
  expect(pass.repairs).toBeGreaterThanOrEqual(1);

  const done = await waitForJob(api, shop.user.token, jobId, (job) => job.cancellations.length === 2 && job.cancellations[1].status === 'completed', 20_000, 'second cancellation of');
  expect(done).toMatchObject({ status: 'completed', sourceOrderId });
  expect(done.cancellations).toMatchObject([
    { status: 'completed', outcome: 'not_placed', scope: 'order' },
    { status: 'completed', outcome: 'cancelled', scope: 'order', lines: [{ sku: 'A-1', quantity: 1 }] },
  ]);
  expect(sandbox.orderOf(shop.acme.shopDomain, 'custom', sourceOrderId)?.status).toBe('cancelled');

  const audit = await auditOf(api, shop.user.token, jobId);
  expect(audit.filter((entry) => entry.action === 'sync_job.order_found')).toMatchObject([
    { metadata: { sourceOrderId, foundBy: expect.stringContaining('divergence watch'), watchPassId: pass.id } },
  ]);
  // The new cancellation says why it was asked for: the pass that found the order, and the cancellation that missed it.
  expect((await auditOf(api, shop.user.token, done.cancellations[1].id)).filter((entry) => entry.action === 'cancellation.requested')).toMatchObject([
    { metadata: { syncJobId: jobId, follows: ended.cancellations[0].id, sourceOrderId, watchPassId: pass.id } },
  ]);
  const events = await queryRows<{ type: string }>(service.databaseUrl, "select type from events where reseller_store_id = $1 and type like 'cancellation.%' order by created_at", [shop.reseller.id]);
  expect(events.map((event) => event.type)).toEqual(['cancellation.completed', 'cancellation.completed']);

  // A second pass lists the order cancelled at the supplier: the service asked for it, so it is not the supplier's own cancellation, and nothing more is asked.
  const again = await check(tenant);
  expect(again).toMatchObject({ status: 'succeeded', repairs: 0 });
  const after = await waitForJob(api, shop.user.token, jobId, () => true);
  expect(after.cancellations).toHaveLength(2);
  expect(after.supplierCancelledAt ?? null).toBeNull();
  // Nothing for the reseller to do: the order the customer cancelled is cancelled at the supplier.
  const todo = (await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data;
  expect(todo.filter((entry: { syncJobId: string }) => entry.syncJobId === jobId)).toEqual([]);
}, 90_000);

it('a shipment while the cancellation asked again is being made is reported once, by that cancellation', async ({ api, sandbox, service }) => {
  const missed = await cancellationMissedTheOrder({ api, sandbox, service });
  const { shop, jobId } = missed;
  await shipWhileAskedAgain({ sandbox, service }, missed, 'ASKED-AGAIN-TRK');
  const asking = await waitForJob(api, shop.user.token, jobId, () => true);
  expect(asking.cancellations[1]).toMatchObject({ scope: 'order' });
  expect(asking.cancellations[1].status).not.toBe('completed');

  const done = await waitForJob(api, shop.user.token, jobId, (job) => job.cancellations[1]?.status === 'completed', 30_000, 'second cancellation of');
  expect(done.cancellations).toMatchObject([
    { status: 'completed', outcome: 'not_placed' },
    { status: 'completed', outcome: 'too_late' },
  ]);
  const reported = await tooLateReports({ api, service }, shop);
  expect(reported.events).toHaveLength(1);
  expect(reported.todo).toMatchObject([{ syncJobId: jobId, subjectId: done.cancellations[1].id }]);
  sandbox.clearFaults(shop.acme.shopDomain);
}, 90_000);

it('a shipment while the cancellation asked again is being made is reported once even when that cancellation dies (on the one before it), and again once it is retried by hand', async ({ api, sandbox, service }) => {
  const missed = await cancellationMissedTheOrder({ api, sandbox, service });
  const { shop, jobId } = missed;
  await shipWhileAskedAgain({ sandbox, service }, missed, 'ASKED-AGAIN-DIES');
  // The supplier stops answering: the second cancellation dies without learning of the shipment.
  sandbox.setFaults(shop.acme.shopDomain, { alwaysFail: true, status: 503 });

  const done = await waitForJob(api, shop.user.token, jobId, (job) => job.cancellations[1]?.status === 'dead', 30_000, 'second cancellation dead of');
  expect(done.cancellations).toMatchObject([
    { status: 'completed', outcome: 'too_late', reason: expect.stringContaining('while the cancellation was being made') },
    { status: 'dead' },
  ]);
  const reported = await tooLateReports({ api, service }, shop);
  expect(reported.events).toHaveLength(1);
  expect(reported.todo).toMatchObject([{ syncJobId: jobId, subjectId: done.cancellations[0].id }]);

  // Retried by hand (its to-do entry asks for it), it learns of the shipment: it ends too_late, and
  // the shipment, reported already, is not reported again.
  sandbox.clearFaults(shop.acme.shopDomain);
  const retried = done.cancellations[1];
  expect((await api.post(`/v1/sync_jobs/${jobId}/cancellations/${retried.id}/retry`, { token: shop.user.token })).status).toBe(200);
  const after = await waitForJob(api, shop.user.token, jobId, (job) => job.cancellations[1]?.status === 'completed', 30_000, 'retried cancellation of');
  expect(after.cancellations).toMatchObject([{ outcome: 'too_late' }, { id: retried.id, outcome: 'too_late' }]);
  const again = await tooLateReports({ api, service }, shop);
  expect(again.events).toHaveLength(1);
  expect(again.todo).toMatchObject([{ subjectId: done.cancellations[0].id }]);
  // Its own outcome is still told (`cancellation.completed`), and its dead entry is resolved.
  const events = await queryRows<{ type: string }>(service.databaseUrl, "select type from events where reseller_store_id = $1 and type like 'cancellation.%' order by created_at", [shop.reseller.id]);
  expect(events.map((event) => event.type)).toEqual(['cancellation.completed', 'cancellation.dead', 'cancellation.too_late', 'cancellation.retried', 'cancellation.completed']);
  const todo = (await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data as { type: string }[];
  expect(todo.map((entry) => entry.type)).toEqual(['too_late']);
}, 90_000);

it.for([
  { finder: 'the sweep', messageState: 'completed' },
  { finder: 'its redelivered message', messageState: 'retry' },
] as const)('a shipment left to the cancellation asked again is reported when $finder finds that cancellation lost on its last retry', { timeout: 90_000 }, async ({ messageState }, { api, sandbox, service }) => {
  const missed = await cancellationMissedTheOrder({ api, sandbox, service });
  const { shop, jobId } = missed;
  await shipWhileAskedAgain({ sandbox, service }, missed, 'ASKED-AGAIN-LOST');
  const asking = (await waitForJob(api, shop.user.token, jobId, (job) => job.cancellations.length === 2)).cancellations[1];
  expect(asking.status).not.toBe('completed');
  // Its worker dies on its last retry: the row stays processing (the attempt in flight now finds it moved), its
  // message done with (the sweep finds the row) or delivered again (the worker's take finds the attempt lost).
  const [row] = await queryRows<{ queue_message_id: string }>(
    service.databaseUrl,
    `update cancellations set status = 'processing', attempts = 4, retries_left = 0, version = version + 1, updated_at = now() - interval '1 hour'
     where id = $1 returning queue_message_id`,
    [asking.id],
  );
  await queryRows(service.databaseUrl, `update pgboss.job set state = $2, start_after = now() where id = $1`, [row!.queue_message_id, messageState]);

  const done = await waitForJob(api, shop.user.token, jobId, (job) => job.cancellations[1]?.status === 'dead', 30_000, 'second cancellation dead of');
  expect(done.cancellations).toMatchObject([{ status: 'completed', outcome: 'too_late' }, { status: 'dead', attempts: 4 }]);
  expect((await tooLateReports({ api, service }, shop)).events).toHaveLength(1);
  sandbox.clearFaults(shop.acme.shopDomain);
});

/**
 * A job whose placement answer was lost, its whole storefront order then cancelled: the
 * cancellation's lookup misses the supplier's order (its list shows it created a day before the job)
 * and ends `not_placed`, while the order is still open at the supplier. With the watch's tenant.
 */
async function cancellationMissedTheOrder({ api, sandbox, service }: { api: ApiClient; sandbox: Sandbox; service: { url: string; databaseUrl: string } }) {
  const shop = await createShop(api, 'custom', 'custom');
  // Every answer lost: the supplier holds the order, the job never learns it and dies.
  const order = sandbox.buildOrderPayload('custom', { id: `ro-${nextOrderId++}`, lines: [{ ...ANVIL, quantity: 1 }] });
  const { jobId, held: placed } = await placeWithAnswerLost(api, sandbox, service.url, shop, order);
  const sourceOrderId = String(placed.id);
  // The supplier's list shows the order as created a day before: the cancellation's lookup of the orders created since the job misses it.
  const stored = sandbox.orderOf(shop.acme.shopDomain, 'custom', sourceOrderId)!;
  sandbox.seedOrder(shop.acme.shopDomain, 'custom', { ...stored, createdAt: new Date(Date.now() - 24 * 60 * 60_000).toISOString() });
  await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
  const ended = await waitForJob(api, shop.user.token, jobId, settled);
  expect(ended).toMatchObject({ status: 'completed', sourceOrderId: null, cancellations: [{ status: 'completed', outcome: 'not_placed', scope: 'order' }] });
  const tenant = { target: { api, url: service.url, databaseUrl: service.databaseUrl }, user: shop.user, reseller: { ...shop.reseller, secret: shop.reseller.secret }, suppliers: [] } as unknown as Tenant;
  return { shop, jobId, sourceOrderId, ended, tenant };
}

/**
 * The supplier answers slowly (2.5 s a call), so the whole-order cancellation the watch's pass asks
 * for again is still being made when the supplier ships the order: its fulfillment is recorded for the job.
 */
async function shipWhileAskedAgain({ sandbox, service }: { sandbox: Sandbox; service: { url: string } }, missed: Awaited<ReturnType<typeof cancellationMissedTheOrder>>, trackingNumber: string) {
  const { shop, jobId, sourceOrderId, tenant } = missed;
  sandbox.setFaults(shop.acme.shopDomain, { latencyMs: 2_500 });
  expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
  const [shipment] = sandbox.shipOrder(shop.acme.shopDomain, 'custom', sourceOrderId, { trackingNumbers: [trackingNumber] });
  expect((await supplierSends(service.url, shop, shipment)).body).toMatchObject({ syncJobIds: [jobId] });
}

/** What told the reseller of a shipment too late: the `cancellation.too_late` events and the `too_late` to-do entries. */
async function tooLateReports({ api, service }: { api: ApiClient; service: { databaseUrl: string } }, shop: Shop) {
  const events = await queryRows<{ type: string }>(service.databaseUrl, "select type from events where reseller_store_id = $1 and type = 'cancellation.too_late'", [shop.reseller.id]);
  const todo = (await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data as { type: string }[];
  return { events, todo: todo.filter((entry) => entry.type === 'too_late') };
}

/** A fulfillments/create webhook from Acme, signed with its secret. */
function supplierSends(serviceUrl: string, shop: Shop, payload: unknown) {
  return sendWebhook({ targetUrl: `${serviceUrl}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'fulfillments/create', payload });
}
