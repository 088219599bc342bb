/**
 * A job whose placement answer was lost has some lines cancelled, then its whole storefront order:
 * the supplier does not answer, so both cancellations' lookups by reference fail at every retry and
 * both die, the job ended unplaced (VOID). The reseller retries the lines cancellation by hand; its
 * lookup finds the supplier order and records it on the job (`sync_job.order_found`, by the
 * cancellation), and cancels those lines. The whole-order cancellation stayed dead: nothing cancelled
 * the rest of the order, and the supplier would ship what the customer cancelled. An order found so
 * re-opens the dead whole-order cancellation, as an order the divergence watch finds does
 * (src/cancellations/service.ts `recordFoundOrderOfVoided`).
 */
import { expect } from 'vitest';
import { ANVIL, BELL, createAcmeShop, placeWithAnswerLost, sendStorefrontWebhook } from './support/cancellations.ts';
import { test as it } from './support/fixtures.ts';
import { queryRows } from './support/database.ts';
import { auditOf, waitForJob } from './support/sync-jobs.ts';

it.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500', DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0' });

let nextId = 3_950_001 + Math.floor(Math.random() * 10_000) * 10;

const over = (c: { status: string }) => c.status === 'completed' || c.status === 'dead';

it("the order another cancellation's lookup finds for a job ended unplaced re-opens its dead whole-order cancellation, which cancels it at the supplier", async ({ api, sandbox, service }) => {
  const shop = await createAcmeShop(api, 'platform_a', 'custom');
  const { user, reseller, acme: supplier } = shop;
  const order = sandbox.buildOrderPayload('platform_a', { id: nextId++, lines: [ANVIL, BELL] }) as Record<string, any>;
  const { jobId, held } = await placeWithAnswerLost(api, sandbox, service.url, shop, order);
  const sourceOrderId = String(held.id);

  // The supplier stops answering: every lookup by reference fails.
  sandbox.setFaults(supplier.shopDomain, { alwaysFail: true, status: 500 });
  const anvil = order.line_items.find((item: any) => item.sku === 'A-1');
  const refund = { id: nextId++, order_id: order.id, created_at: new Date().toISOString(), note: null, transactions: [], refund_line_items: [{ id: nextId++, line_item_id: anvil.id, quantity: 1, restock_type: 'cancel', line_item: anvil }] };
  expect((await sendStorefrontWebhook(service.url, shop, 'refunds/create', refund)).body).toMatchObject({ syncJobIds: [jobId] });
  await waitForJob(api, user.token, jobId, (job) => job.cancellations[0]?.status === 'dead', 30_000, 'lines cancellation dead of');
  expect((await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { ...order, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' })).status).toBe(200);
  const dead = await waitForJob(api, user.token, jobId, (job) => job.cancellations.length === 2 && job.cancellations.every((c: any) => c.status === 'dead'), 30_000, 'both cancellations dead of');
  expect(dead).toMatchObject({ status: 'completed', sourceOrderId: null });
  const [lines, whole] = dead.cancellations;
  expect(lines).toMatchObject({ scope: 'lines', lines: [{ sku: 'A-1', quantity: 1 }] });
  expect(whole).toMatchObject({ scope: 'order' });

  // The supplier answers again; the reseller retries the lines cancellation by hand: its lookup finds the order.
  sandbox.clearFaults(supplier.shopDomain);
  const retried = await api.post(`/v1/sync_jobs/${jobId}/cancellations/${lines.id}/retry`, { token: user.token });
  expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);

  const done = await waitForJob(api, user.token, jobId, (job) => job.sourceOrderId !== null && job.cancellations.every(over) && job.cancellations[1].attempts > whole.attempts, 30_000, 'dead whole-order cancellation re-opened and over, of');
  expect(done).toMatchObject({ sourceOrderId });
  expect(done.cancellations[1]).toMatchObject({ id: whole.id, scope: 'order', status: 'completed', outcome: 'cancelled' });
  expect(sandbox.orderOf(supplier.shopDomain, 'custom', sourceOrderId)?.status).toBe('cancelled');
  expect((await auditOf(api, user.token, jobId)).filter((entry) => entry.action === 'sync_job.order_found')).toMatchObject([
    { metadata: { sourceOrderId, foundBy: expect.stringContaining('cancellation') } },
  ]);
  // The re-opening is audited and announced as a retry by the service, naming the order and the cancellation whose lookup found it.
  expect((await auditOf(api, user.token, whole.id)).filter((entry) => entry.action === 'cancellation.retried')).toMatchObject([
    { actorId: 'system', metadata: { sourceOrderId, foundByCancellationId: lines.id, reason: expect.stringContaining('found') } },
  ]);
  const events = await queryRows<{ type: string }>(service.databaseUrl, "select type from events where reseller_store_id = $1 and type = 'cancellation.retried'", [reseller.id]);
  // The retry by hand, and the re-opening.
  expect(events).toHaveLength(2);
  const todo = (await api.get(`/v1/reseller_stores/${reseller.id}/divergences`, { token: user.token })).body.data;
  expect(todo.filter((entry: { syncJobId: string; type: string }) => entry.syncJobId === jobId && entry.type === 'cancellation_dead')).toEqual([]);
}, 90_000);

it("the order another cancellation's lookup finds for a job its whole-order cancellation ended not_placed is cancelled whole at the supplier", async ({ api, sandbox, service }) => {
  const shop = await createAcmeShop(api, 'platform_a', 'custom');
  const { user, acme: supplier } = shop;
  const order = sandbox.buildOrderPayload('platform_a', { id: nextId++, lines: [ANVIL, BELL] }) as Record<string, any>;
  const { jobId, held } = await placeWithAnswerLost(api, sandbox, service.url, shop, order);
  const sourceOrderId = String(held.id);
  const stored = sandbox.orderOf(supplier.shopDomain, 'custom', sourceOrderId)!;

  // Some lines cancelled while the supplier does not answer: that cancellation's lookups fail, and it dies.
  sandbox.setFaults(supplier.shopDomain, { alwaysFail: true, status: 500 });
  const anvil = order.line_items.find((item: any) => item.sku === 'A-1');
  const refund = { id: nextId++, order_id: order.id, created_at: new Date().toISOString(), note: null, transactions: [], refund_line_items: [{ id: nextId++, line_item_id: anvil.id, quantity: 1, restock_type: 'cancel', line_item: anvil }] };
  expect((await sendStorefrontWebhook(service.url, shop, 'refunds/create', refund)).body).toMatchObject({ syncJobIds: [jobId] });
  await waitForJob(api, user.token, jobId, (job) => job.cancellations[0]?.status === 'dead', 30_000, 'lines cancellation dead of');
  // The supplier answers, but its list does not show the order where the lookup looks (created a day before, as the list says): the whole-order cancellation ends not_placed.
  sandbox.clearFaults(supplier.shopDomain);
  sandbox.seedOrder(supplier.shopDomain, 'custom', { ...stored, createdAt: new Date(Date.now() - 24 * 60 * 60_000).toISOString() });
  expect((await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { ...order, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' })).status).toBe(200);
  const unplaced = await waitForJob(api, user.token, jobId, (job) => job.cancellations.length === 2 && job.cancellations[1].status === 'completed', 30_000, 'whole-order cancellation over of');
  const [lines, whole] = unplaced.cancellations;
  expect(whole).toMatchObject({ scope: 'order', outcome: 'not_placed' });

  // The list shows it again; the reseller retries the lines cancellation by hand: its lookup finds the order.
  sandbox.seedOrder(supplier.shopDomain, 'custom', stored);
  expect((await api.post(`/v1/sync_jobs/${jobId}/cancellations/${lines.id}/retry`, { token: user.token })).status).toBeLessThan(300);
  const done = await waitForJob(api, user.token, jobId, (job) => job.sourceOrderId !== null && job.cancellations.length === 3 && job.cancellations.every(over), 30_000, 'the whole order asked again, of');
  expect(done).toMatchObject({ sourceOrderId });
  expect(done.cancellations[2]).toMatchObject({ scope: 'order', status: 'completed', outcome: 'cancelled' });
  expect(sandbox.orderOf(supplier.shopDomain, 'custom', sourceOrderId)?.status).toBe('cancelled');
  expect((await auditOf(api, user.token, done.cancellations[2].id)).filter((entry) => entry.action === 'cancellation.requested')).toMatchObject([
    { actorId: 'system', metadata: { sourceOrderId, follows: whole.id, foundByCancellationId: lines.id } },
  ]);
}, 90_000);
