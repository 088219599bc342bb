/**
 * A supplier's own cancellation (order-changes.md, "A supplier's own cancellation"),
 * end to end through the fulfillment webhook: what the job records, its audit entries and events,
 * and the reseller's to-do list. Real service, queue, database and sandbox.
 */
import { describe, expect } from 'vitest';
import { sendWebhook } from './sandbox/server.ts';
import { test } from './support/fixtures.ts';
import { ANVIL, BELL, createAcmeShop, sendStorefrontWebhook, type Shop } from './support/cancellations.ts';
import { auditOf, getJob, waitForJob } from './support/sync-jobs.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';
import { queryRows } from './support/database.ts';
import { check, type Tenant } from './support/watch.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0' });

let nextOrderId = 2_390_000 + Math.floor(Math.random() * 10_000) * 10;

type AcmeShop = Omit<Shop, 'bolt'>;

const it = test
  /** A custom storefront with Acme, a custom supplier, and one order of anvils and bells placed there. */
  .extend('placed', { scope: 'file' }, ({ api, service, sandbox }) => async () => {
    const shop = await createAcmeShop(api, 'custom', 'custom');
    const order = sandbox.buildOrderPayload('custom', { id: `ord_${nextOrderId++}`, lines: [ANVIL, BELL] }) as Record<string, any>;
    const ids = ((await sendStorefrontWebhook(service.url, shop, 'orders/create', order)).body as { syncJobIds: string[] }).syncJobIds;
    const job = await waitForJob(api, shop.user.token, ids[0]!, (j) => j.status === 'completed');
    return { shop, order, job };
  })
  .extend('supplierSends', { scope: 'file' }, ({ service }) => (shop: AcmeShop, topic: string, payload: unknown, webhookId?: string) =>
    sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic, payload, ...(webhookId && { webhookId }) }));

const todoOf = async (api: any, shop: AcmeShop) =>
  ((await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data as any[]).map((entry) => ({ type: entry.type, syncJobId: entry.syncJobId, detail: entry.detail }));
const supplierCancelledEvents = async (api: any, shop: AcmeShop) =>
  (await api.get(`/v1/events?type=sync_job.supplier_cancelled&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token })).body.data as any[];

describe("a custom supplier's own cancellation of some lines, then of the whole order", () => {
  it('records the whole-order cancellation too: the job, its audit entry and event, and the to-do entry say the whole order is cancelled', async ({ api, placed, supplierSends }) => {
    const { shop, job: placedJob } = await placed();
    // The supplier runs out of anvils: it cancels that line only.
    const partial = await supplierSends(shop, 'orders/cancelled', { id: placedJob.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'anvils out of stock', lines: [{ sku: 'A-1', quantity: 2 }] });
    expect(partial.body).toMatchObject({ received: true, syncJobIds: [placedJob.id] });
    const afterPartial = await getJob(api, shop.user.token, placedJob.id);
    expect(afterPartial.supplierCancelReason).toContain('A-1');
    expect(await supplierCancelledEvents(api, shop)).toHaveLength(1);

    // A day later it closes the rest of the order too (no lines: the whole order).
    const whole = await supplierSends(shop, 'orders/cancelled', { id: placedJob.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'warehouse closed' });
    expect(whole.body).toMatchObject({ received: true, syncJobIds: [placedJob.id] });

    const job = await getJob(api, shop.user.token, placedJob.id);
    // The reseller must learn that the bells will not come either.
    expect(job.supplierCancelReason).toContain('warehouse closed');
    expect(job.supplierCancelReason).not.toMatch(/^anvils out of stock; lines cancelled: A-1 × 2$/);
    const events = await supplierCancelledEvents(api, shop);
    expect(events).toHaveLength(2);
    expect(events[0]!.data.object.supplierCancelReason).toContain('warehouse closed');
    const audit = (await auditOf(api, shop.user.token, placedJob.id)).filter((entry) => entry.action === 'sync_job.supplier_cancelled');
    expect(audit).toHaveLength(2);
    // Still one entry on the to-do list for the job, and it says what is now the case.
    const todo = await todoOf(api, shop);
    expect(todo).toHaveLength(1);
    expect(todo[0]).toMatchObject({ type: 'supplier_cancelled', syncJobId: placedJob.id });
    expect(todo[0]!.detail).toContain('warehouse closed');

    // A redelivery of either changes nothing more.
    await supplierSends(shop, 'orders/cancelled', { id: placedJob.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'warehouse closed' });
    await supplierSends(shop, 'orders/cancelled', { id: placedJob.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'anvils out of stock', lines: [{ sku: 'A-1', quantity: 2 }] });
    expect(await supplierCancelledEvents(api, shop)).toHaveLength(2);
    expect((await getJob(api, shop.user.token, placedJob.id)).supplierCancelReason).toBe(job.supplierCancelReason);
  });
});

describe("a custom supplier's own cancellation of some lines only", () => {
  it('leaves the rest of the order watched: no tracking for it after STALE_AFTER_MS is stale, beside the supplier_cancelled entry', async ({ api, service, placed, supplierSends }) => {
    const { shop, job: placedJob } = await placed();
    const partial = await supplierSends(shop, 'orders/cancelled', { id: placedJob.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'anvils out of stock', lines: [{ sku: 'A-1', quantity: 2 }] });
    expect(partial.body).toMatchObject({ received: true, syncJobIds: [placedJob.id] });

    // The bells are still to ship; a week later nothing has come.
    await queryRows(service.databaseUrl, "update sync_jobs set completed_at = now() - interval '8 days' where id = $1", [placedJob.id]);
    const tenant = { target: { api, url: service.url, databaseUrl: service.databaseUrl }, user: shop.user, reseller: shop.reseller, suppliers: [] } as unknown as Tenant;
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    const todo = await todoOf(api, shop);
    expect(todo.map((entry) => entry.type).sort()).toEqual(['stale', 'supplier_cancelled']);

    // The supplier then cancels the rest too: the stale entry is resolved (nothing is left to ship), once.
    await supplierSends(shop, 'orders/cancelled', { id: placedJob.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'warehouse closed' });
    expect((await todoOf(api, shop)).map((entry) => entry.type)).toEqual(['supplier_cancelled']);
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    expect((await todoOf(api, shop)).map((entry) => entry.type)).toEqual(['supplier_cancelled']);
  });
});

describe("a custom supplier's cancellation that names no line (an empty `lines`)", () => {
  it('cancels nothing: ignored, as the storefront reader reads the same body, and the job is not marked cancelled by its supplier', async ({ api, placed, supplierSends }) => {
    const { shop, job: placedJob } = await placed();
    const response = await supplierSends(shop, 'orders/cancelled', { id: placedJob.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'nothing', lines: [] });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ received: true, ignored: true });
    const job = await getJob(api, shop.user.token, placedJob.id);
    expect(job.supplierCancelledAt).toBeNull();
    expect(await todoOf(api, shop)).toEqual([]);
    expect(await supplierCancelledEvents(api, shop)).toEqual([]);
  });
});

describe("a custom supplier's cancellation naming thousands of lines", () => {
  it('keeps a reason of at most 500 characters (the lines are kept in full elsewhere), in the job and its event', async ({ api, placed, supplierSends }) => {
    const { shop, job: placedJob } = await placed();
    const lines = Array.from({ length: 3_000 }, (_, i) => ({ sku: `SKU-${String(i).padStart(5, '0')}`, quantity: 1 }));
    const response = await supplierSends(shop, 'orders/cancelled', { id: placedJob.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'recall', lines });
    expect(response.body).toMatchObject({ received: true, syncJobIds: [placedJob.id] });
    const job = await getJob(api, shop.user.token, placedJob.id);
    expect(job.supplierCancelReason).toMatch(/^recall; lines cancelled: SKU-00000 × 1, SKU-00001 × 1, /);
    expect([...job.supplierCancelReason].length).toBeLessThanOrEqual(500);
    const [event] = await supplierCancelledEvents(api, shop);
    expect([...event!.data.object.supplierCancelReason].length).toBeLessThanOrEqual(500);
  });
});

describe("a custom supplier's cancellation widened twice, each report with its own long reason", () => {
  it('keeps the joined reason within 500 characters, in the job, its event and the to-do entry', async ({ api, placed, supplierSends }) => {
    const { shop, job: placedJob } = await placed();
    const reasons = ['first', 'second', 'third'].map((word) => `${word}: ${'stock recount '.repeat(25)}`);
    for (const [index, reason] of reasons.entries()) {
      const lines = Array.from({ length: index + 1 }, (_, i) => ({ sku: `W-${i}`, quantity: 1 }));
      const response = await supplierSends(shop, 'orders/cancelled', { id: placedJob.sourceOrderId, cancelledAt: new Date().toISOString(), reason, lines });
      expect(response.body).toMatchObject({ received: true, syncJobIds: [placedJob.id] });
    }
    const job = await getJob(api, shop.user.token, placedJob.id);
    expect(job.supplierCancelReason).toMatch(/^first: stock recount/);
    expect([...job.supplierCancelReason].length).toBeLessThanOrEqual(500);
    const events = await supplierCancelledEvents(api, shop);
    expect(events).toHaveLength(3);
    for (const event of events) expect([...event.data.object.supplierCancelReason].length).toBeLessThanOrEqual(500);
    const [entry] = await todoOf(api, shop);
    expect([...entry!.detail].length).toBeLessThanOrEqual(600);
  });
});
