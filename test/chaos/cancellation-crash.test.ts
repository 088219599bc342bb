/**
 * Issue 23, item 8: a SIGKILL of the whole service (node and its PostgreSQL) in the middle of
 * cancellations. Orders are placed on two suppliers, then the storefront cancels every one of them
 * (redelivering each orders/cancelled until it gets a 2xx); while the cancellations are reaching the
 * suppliers the process group is killed and started again on the same DATA_DIR.
 *
 * Afterwards every cancellation completed `cancelled`, and each supplier order was cancelled
 * exactly once: the kill costs time, never a cancellation and never a second call for it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../sandbox/server.ts';
import { queryRows } from '../support/database.ts';
import { waitFor } from '../support/wait.ts';
import type { ChildService } from '../support/child-service.ts';
import { startCrashableService, type CrashableService } from './support/crashable.ts';
import { ChaosClient, createReseller, createSupplier, registerUser, type ResellerFixture, type SupplierFixture } from './support/client.ts';
import { deliverUntilAccepted, mapLimit } from './support/deliverer.ts';
import { itLeaksNoSecret } from './support/ledger.ts';

const ORDERS = 40;
const JOBS = ORDERS * 2;
/** Each supplier call takes this long, so the kill finds cancellations on their way to suppliers. */
const SUPPLIER_LATENCY_MS = 150;

let run: CrashableService;
let sandbox: Sandbox;
let service: ChildService;
let dataDir: string;
let client: ChaosClient;
let reseller: ResellerFixture;
let suppliers: [SupplierFixture, SupplierFixture];

const databaseUrl = () => run.databaseUrl();

const cancelledCount = () => suppliers.reduce((sum, supplier) => sum + sandbox.cancellationsFor(supplier.shopDomain).length, 0);

beforeAll(async () => {
  run = await startCrashableService('cancel', { SWEEP_INTERVAL_MS: '2000' });
  ({ sandbox, service, dataDir, client } = run);
  const user = await registerUser(client);
  reseller = await createReseller(client, user.token);
  suppliers = [
    await createSupplier(client, user.token, reseller.id, { platform: 'custom' }),
    await createSupplier(client, user.token, reseller.id, { platform: 'platform_a' }),
  ];
});

afterAll(async () => {
  await run?.close();
});

describe('a SIGKILL of the whole service in the middle of cancellations', () => {
  it('cancels each supplier order exactly once and loses no cancellation', async () => {
    const orders = Array.from({ length: ORDERS }, (_, i) =>
      sandbox.buildOrderPayload('platform_a', {
        id: 910_000_000 + i,
        lines: [
          { sku: `A-${i}`, title: 'Anvil', vendor: suppliers[0].vendorTag, quantity: 1, price: '12.50' },
          { sku: `B-${i}`, title: 'Bolt', vendor: suppliers[1].vendorTag, quantity: 2, price: '3.99' },
        ],
      }),
    );
    const event = (topic: 'orders/create' | 'orders/cancelled', payload: unknown) => ({
      url: () => `${client.baseUrl}/v1/orders/webhook`,
      shopDomain: reseller.shopDomain,
      secret: reseller.webhookSecret,
      topic,
      payload,
    });
    await mapLimit(orders, 6, (payload) => deliverUntilAccepted(event('orders/create', payload)));
    await waitFor(async () => {
      const [row] = await queryRows<{ done: string }>(databaseUrl(), `select count(*) filter (where status = 'completed' and source_order_id is not null) as done from sync_jobs`);
      return Number(row!.done) === JOBS;
    }, 120_000, `all ${JOBS} orders placed`);

    for (const supplier of suppliers) sandbox.setFaults(supplier.shopDomain, { latencyMs: SUPPLIER_LATENCY_MS });
    const stream = mapLimit(orders, 4, (payload) => deliverUntilAccepted(event('orders/cancelled', { ...payload, cancelled_at: new Date().toISOString() })));
    await waitFor(async () => cancelledCount() >= 10, 180_000, 'some cancellations carried out').catch(async (error: unknown) => {
      const states = await queryRows(databaseUrl(), 'select status, outcome, error_message, count(*) from cancellations group by 1, 2, 3');
      const signals = await queryRows(databaseUrl(), 'select count(*) from order_cancellations');
      console.error('cancellations when the wait timed out', JSON.stringify({ states, signals, cancelled: cancelledCount(), log: service.lines.slice(-15) }));
      throw error;
    });
    const before = cancelledCount();
    await service.kill();
    expect(before).toBeLessThan(JOBS);
    await service.start();
    const delivered = await stream;
    expect(delivered.every((delivery) => delivery.accepted.status === 200)).toBe(true);

    const url = databaseUrl();
    await waitFor(async () => {
      const [row] = await queryRows<{ done: string }>(url, `select count(*) filter (where status = 'completed') as done from cancellations`);
      return Number(row!.done) === JOBS;
    }, 150_000, `all ${JOBS} cancellations completed`);
    const rows = await queryRows<{ sync_job_id: string; outcome: string }>(url, 'select sync_job_id, outcome from cancellations');
    expect(rows).toHaveLength(JOBS);
    expect(new Set(rows.map((row) => row.sync_job_id)).size).toBe(JOBS);
    expect(rows.every((row) => row.outcome === 'cancelled')).toBe(true);

    // Each supplier order cancelled exactly once.
    for (const supplier of suppliers) {
      const placed = sandbox.ordersFor(supplier.shopDomain).map((order) => String(order.id)).sort();
      const cancelled = sandbox.cancellationsFor(supplier.shopDomain).map((cancellation) => cancellation.orderId).sort();
      expect(placed).toHaveLength(ORDERS);
      expect(cancelled, `cancellations carried out by the ${supplier.platform} supplier`).toEqual(placed);
    }
    expect(await service.stop()).toBe(0);
  });
});

itLeaksNoSecret();
