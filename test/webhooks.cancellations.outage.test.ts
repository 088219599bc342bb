/**
 * The 503 rule for the cancellation topics (order-changes.md "Signals in": signature checks,
 * de-duplication by webhook id and the 503 rule are the same as for orders/create and
 * fulfillments/create). A storefront's `orders/cancelled` (POST /v1/orders/webhook) and a supplier's
 * own `orders/cancelled` (POST /v1/fulfillments/webhook) that the service cannot record answer 503
 * `unavailable` with Retry-After, so the platform delivers them again; once the database is back the
 * redelivery, under the same webhook id, is applied exactly once (nothing lost, nothing doubled).
 *
 * The webhooks go to an API process that reaches the database through a relay the test controls
 * (DbLink): `cut()` is the database going away for that process, as test/chaos/db-outage.test.ts
 * does for orders/create by stopping PostgreSQL. A second way in fails the recording itself, after
 * the delivery verified: the test holds a lock the recording needs and terminates the session that
 * waits on it (a connection lost mid-transaction). For a storefront cancellation that is its one
 * transaction, which records and applies the signal: nothing of it stays. (With the
 * database away, a supplier's delivery fails already at its signature check, which reads the
 * domain's version each time; the lost connection is what reaches its recording.)
 */
import pg from 'pg';
import { describe, expect } from 'vitest';
import { expectErrorEnvelope } from './support/assertions.ts';
import { createShop, ANVIL, type Shop } from './support/cancellations.ts';
import { queryRows } from './support/database.ts';
import { DbLink } from './support/db-link.ts';
import { test } from './support/fixtures.ts';
import { startTestService } from './support/service.ts';
import { auditOf, getJob, waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH, postRawWebhook, uniqueSuffix } from './support/webhooks.ts';
import type { ApiResponse } from './support/api.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });

let nextOrderId = 2_600_000 + Math.floor(Math.random() * 10_000) * 10;

const it = test
  /** The relay between the webhook-receiving process and the database. */
  .extend('link', { scope: 'file' }, async ({ service }, { onCleanup }) => {
    const link = await DbLink.open(service.databaseUrl);
    onCleanup(() => link.close());
    return link;
  })
  /**
   * The API process the platforms deliver to, on the database through `link` (the file's service
   * runs the workers). It keeps store look-ups for a minute, so once a store's first delivery was
   * verified a storefront delivery verifies without the database and it is the recording that fails.
   */
  .extend('edge', { scope: 'file' }, async ({ link, processEnv }, { onCleanup }) => {
    const edge = await startTestService({ ...processEnv, ROLE: 'api', DATABASE_URL: link.databaseUrl, WEBHOOK_STORE_CACHE_TTL_MS: '60000' });
    onCleanup(async () => {
      link.restore();
      await edge.stop();
    });
    return edge;
  })
  /** A shop (platform_a storefront, Acme on platform_a) with an order routed through the edge and placed. */
  .extend('placedOrder', { scope: 'file' }, ({ api, sandbox, edge }) => async () => {
    const shop = await createShop(api, 'platform_a', 'platform_a');
    const order = sandbox.buildOrderPayload('platform_a', { id: nextOrderId++, lines: [ANVIL] }) as Record<string, any>;
    sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', order);
    const routed = await storefrontDelivery(edge.url, shop, 'orders/create', order);
    expect(routed.status, JSON.stringify(routed.body)).toBe(200);
    const jobId = (routed.body as { syncJobIds: string[] }).syncJobIds[0]!;
    const job = await waitForJob(api, shop.user.token, jobId, (j) => j.status === 'completed', 20_000);
    return { shop, order, jobId, sourceOrderId: job.sourceOrderId as string };
  });

function storefrontDelivery(url: string, shop: Shop, topic: string, payload: unknown, webhookId?: string): Promise<ApiResponse> {
  return postRawWebhook(url, ORDERS_PATH, { body: JSON.stringify(payload), secret: shop.reseller.secret, shopDomain: shop.reseller.shopDomain, topic, webhookId });
}

function supplierDelivery(url: string, shop: Shop, topic: string, payload: unknown, webhookId: string): Promise<ApiResponse> {
  return postRawWebhook(url, FULFILLMENTS_PATH, { body: JSON.stringify(payload), secret: shop.acme.secret, shopDomain: shop.acme.shopDomain, topic, webhookId });
}

/** The platform_a storefront's whole-order cancellation, and the platform_a supplier's own. */
const storefrontCancellation = (order: Record<string, any>) => ({ ...order, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' });
const supplierCancellation = (sourceOrderId: string) => ({ id: Number(sourceOrderId), cancelled_at: new Date().toISOString(), cancel_reason: 'inventory' });

function expectUnavailable(response: ApiResponse): void {
  expect(response.status, JSON.stringify(response.body)).toBe(503);
  expectErrorEnvelope(response.body);
  expect(response.body.error.code).toBe('unavailable');
  expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
}

/** With the database away from the edge: the delivery, and the platform's next try, both answered 503. */
async function expectUnavailableWhileCut(link: DbLink, send: () => Promise<ApiResponse>): Promise<void> {
  link.cut();
  try {
    expectUnavailable(await send());
    // The platform tries again while it lasts: the same answer.
    expectUnavailable(await send());
  } finally {
    link.restore();
  }
}

/**
 * Once the database is back: the redelivery is accepted with the job it reached, and one more (its
 * 200 lost, say) is the same signal: nothing more, and the same answer.
 */
async function expectAcceptedOnce(send: () => Promise<ApiResponse>, jobId: string): Promise<void> {
  const accepted = await redeliver(send);
  expect(accepted.body).toMatchObject({ received: true, syncJobIds: [jobId] });
  const again = await send();
  expect(again.status, JSON.stringify(again.body)).toBe(200);
  expect(again.body).toMatchObject({ received: true, syncJobIds: [jobId] });
}

/** Delivers as a platform does once the database is back: again, same webhook id, until a 2xx. */
async function redeliver(send: () => Promise<ApiResponse>): Promise<ApiResponse> {
  return waitFor(async () => {
    const response = await send();
    return response.status === 200 ? response : null;
  }, 15_000, 'the redelivery to be accepted');
}

/**
 * Holds, from a session of the test, a lock the service's recording needs (`take`), makes the
 * delivery, and terminates the service's session once it waits on that lock: the connection is lost
 * mid-recording. Returns the delivery's answer; the lock is released after.
 */
async function loseConnectionOn(databaseUrl: string, take: (holder: pg.Client) => Promise<unknown>, deliver: () => Promise<ApiResponse>): Promise<ApiResponse> {
  const holder = new pg.Client({ connectionString: databaseUrl });
  await holder.connect();
  try {
    await holder.query('begin');
    await take(holder);
    const answer = deliver();
    const [waiting] = await waitFor(async () => {
      const rows = await queryRows<{ pid: number }>(databaseUrl, `select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> $1`, [
        (await holder.query('select pg_backend_pid() as pid')).rows[0].pid,
      ]);
      return rows.length === 1 ? rows : null;
    }, 10_000, "the service's recording to wait on the lock");
    await queryRows(databaseUrl, 'select pg_terminate_backend($1)', [waiting!.pid]);
    return await answer;
  } finally {
    await holder.query('rollback').catch(() => {});
    await holder.end();
  }
}

const signalsOf = (databaseUrl: string, shop: Shop, order: Record<string, any>) =>
  queryRows<{ id: string; dedupe_key: string }>(databaseUrl, 'select id, dedupe_key from order_cancellations where reseller_store_id = $1 and external_order_id = $2', [shop.reseller.id, String(order.id)]);

async function eventsOf(api: { get: (path: string, options: { token: string }) => Promise<ApiResponse> }, shop: Shop, type: string): Promise<any[]> {
  const response = await api.get(`/v1/events?type=${type}&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data;
}

describe("a storefront's orders/cancelled the service cannot record", () => {
  /** One cancellation, cancelled at the supplier once, one signal, audited and announced once. */
  async function expectCancelledOnce({ api, sandbox, service }: { api: any; sandbox: any; service: { databaseUrl: string } }, shop: Shop, order: Record<string, any>, jobId: string, webhookId: string) {
    const job = await waitForJob(api, shop.user.token, jobId, (j) => j.cancellations.length > 0 && j.cancellations.every((c: any) => c.status === 'completed'));
    expect(job.cancellations).toHaveLength(1);
    expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'cancelled', attempts: 1 });
    expect(sandbox.cancellationsFor(shop.acme.shopDomain)).toHaveLength(1);
    expect(await signalsOf(service.databaseUrl, shop, order)).toEqual([expect.objectContaining({ dedupe_key: `webhook:${webhookId}` })]);
    const audited = (await auditOf(api, shop.user.token, String(order.id))).filter((entry) => entry.action === 'order.cancelled');
    expect(audited).toHaveLength(1);
    expect(audited[0].metadata).toMatchObject({ routed: true, syncJobIds: [jobId], webhookId });
    expect(await eventsOf(api, shop, 'order.cancelled')).toHaveLength(1);
  }

  it('answers 503 while the database is away, records nothing, and applies the redelivery once', async ({ api, sandbox, service, edge, link, placedOrder }) => {
    const { shop, order, jobId } = await placedOrder();
    const webhookId = `wh-cancel-${uniqueSuffix()}`;
    const cancellation = storefrontCancellation(order);

    const send = () => storefrontDelivery(edge.url, shop, 'orders/cancelled', cancellation, webhookId);
    await expectUnavailableWhileCut(link, send);
    expect(await signalsOf(service.databaseUrl, shop, order)).toEqual([]);
    expect((await getJob(api, shop.user.token, jobId)).cancellations).toEqual([]);

    await expectAcceptedOnce(send, jobId);
    await expectCancelledOnce({ api, sandbox, service }, shop, order, jobId, webhookId);
  });

  it('answers 503 when the connection is lost while the signal is applied, records nothing, and the redelivery applies it once', async ({ api, sandbox, service, edge, placedOrder }) => {
    const { shop, order, jobId } = await placedOrder();
    const webhookId = `wh-cancel-${uniqueSuffix()}`;
    const cancellation = storefrontCancellation(order);

    // The order's cancellation lock (src/cancellations/repository.ts `lockOrders`), the first thing
    // the signal's transaction takes before recording and applying it.
    const lockKey = `cancel:${shop.reseller.id}:${order.id}`;
    const send = () => storefrontDelivery(edge.url, shop, 'orders/cancelled', cancellation, webhookId);
    const answer = await loseConnectionOn(service.databaseUrl, (holder) => holder.query('select pg_advisory_xact_lock(hashtext($1))', [lockKey]), send);
    expectUnavailable(answer);
    // Rolled back as a whole: no signal, no cancellation, no audit entry, no event.
    expect(await signalsOf(service.databaseUrl, shop, order)).toEqual([]);
    expect((await getJob(api, shop.user.token, jobId)).cancellations).toEqual([]);
    expect((await auditOf(api, shop.user.token, String(order.id))).filter((entry) => entry.action === 'order.cancelled')).toEqual([]);

    await expectAcceptedOnce(send, jobId);
    await expectCancelledOnce({ api, sandbox, service }, shop, order, jobId, webhookId);
  });
});

describe("a supplier's own orders/cancelled the service cannot record", () => {
  /** Recorded on the job once: one audit entry, one event, the storefront untouched. */
  async function expectRecordedOnce({ api, sandbox }: { api: any; sandbox: any }, shop: Shop, jobId: string, webhookId: string) {
    const job = await getJob(api, shop.user.token, jobId);
    expect(job).toMatchObject({ status: 'completed', supplierCancelledAt: expect.any(String), supplierCancelReason: 'inventory', cancellations: [] });
    const audited = (await auditOf(api, shop.user.token, jobId)).filter((entry) => entry.action === 'sync_job.supplier_cancelled');
    expect(audited).toHaveLength(1);
    expect(audited[0].metadata).toMatchObject({ webhookId });
    expect(await eventsOf(api, shop, 'sync_job.supplier_cancelled')).toHaveLength(1);
    expect(sandbox.requestsFor(shop.reseller.shopDomain).filter((request: { method: string }) => request.method !== 'GET')).toEqual([]);
  }

  it('answers 503 while the database is away, records nothing, and records the redelivery once', async ({ api, sandbox, edge, link, placedOrder }) => {
    const { shop, jobId, sourceOrderId } = await placedOrder();
    const webhookId = `wh-supplier-${uniqueSuffix()}`;
    const report = supplierCancellation(sourceOrderId);

    const send = () => supplierDelivery(edge.url, shop, 'orders/cancelled', report, webhookId);
    await expectUnavailableWhileCut(link, send);
    expect(await getJob(api, shop.user.token, jobId)).toMatchObject({ supplierCancelledAt: null });

    await expectAcceptedOnce(send, jobId);
    await expectRecordedOnce({ api, sandbox }, shop, jobId, webhookId);
  });

  it('answers 503 when the connection is lost while recording it, and records the redelivery once', async ({ api, sandbox, service, edge, placedOrder }) => {
    const { shop, jobId, sourceOrderId } = await placedOrder();
    const webhookId = `wh-supplier-${uniqueSuffix()}`;
    const report = supplierCancellation(sourceOrderId);

    // The job's row, which the recording updates (`markSupplierCancelledIn`) in its transaction.
    const send = () => supplierDelivery(edge.url, shop, 'orders/cancelled', report, webhookId);
    const answer = await loseConnectionOn(service.databaseUrl, (holder) => holder.query('select id from sync_jobs where id = $1 for update', [jobId]), send);
    expectUnavailable(answer);
    expect(await getJob(api, shop.user.token, jobId)).toMatchObject({ supplierCancelledAt: null });
    expect((await auditOf(api, shop.user.token, jobId)).filter((entry) => entry.action === 'sync_job.supplier_cancelled')).toEqual([]);

    await expectAcceptedOnce(send, jobId);
    await expectRecordedOnce({ api, sandbox }, shop, jobId, webhookId);
  });
});
