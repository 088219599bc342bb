/**
 * Issue 6, item 1: crash safety. The service runs as its own process on its embedded PostgreSQL
 * (DATA_DIR in a temp folder) against the sandbox platform. A platform delivers a stream of signed
 * orders/create webhooks (120 orders, each split over two suppliers), redelivering every event
 * until it gets a 2xx. Twice, while orders are arriving and being placed, the whole process group
 * (node and PostgreSQL) is SIGKILLed and the service is started again on the same DATA_DIR.
 *
 * Afterwards every order was accepted, every sync job completed (row and queue message), and each
 * supplier holds exactly one order per reseller order: the kills cost time, never an order and
 * never a duplicate.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_AUTO_RETRIES } from '../../machines/attempt.machine.ts';
import type { Sandbox } from '../sandbox/server.ts';
import { queryRows } from '../support/database.ts';
import { waitFor } from '../support/wait.ts';
import { ChildService, isAlive, postmasterPid } from '../support/child-service.ts';
import { startCrashableService, type CrashableService } from './support/crashable.ts';
import { ChaosClient, createReseller, createSupplier, registerUser, type ResellerFixture, type SupplierFixture } from './support/client.ts';
import { deliverUntilAccepted, mapLimit, type DeliveryResult } from './support/deliverer.ts';
import { itLeaksNoSecret } from './support/ledger.ts';

const SHOPS = 3;
const ORDERS_PER_SHOP = 40;
const ORDERS = SHOPS * ORDERS_PER_SHOP;
const JOBS = ORDERS * 2;
/** Each supplier call takes this long, so kills find orders on their way to suppliers. */
const SUPPLIER_LATENCY_MS = 120;

interface Shop {
  reseller: ResellerFixture;
  suppliers: [SupplierFixture, SupplierFixture];
}

let run: CrashableService;
let sandbox: Sandbox;
let service: ChildService;
let dataDir: string;
let client: ChaosClient;
const shops: Shop[] = [];
const deliveries: DeliveryResult[] = [];
const kills: { afterAccepted: number; supplierOrdersBefore: number; postmasterPid: number | null; postmasterDead: boolean }[] = [];

const databaseUrl = () => run.databaseUrl();

const supplierOrderCount = () => shops.flatMap((shop) => shop.suppliers).reduce((sum, supplier) => sum + sandbox.ordersFor(supplier.shopDomain).length, 0);

beforeAll(async () => {
  run = await startCrashableService('crash', {});
  ({ sandbox, service, dataDir, client } = run);

  const user = await registerUser(client);
  for (let i = 0; i < SHOPS; i++) {
    const reseller = await createReseller(client, user.token);
    const suppliers = [
      await createSupplier(client, user.token, reseller.id, { platform: 'custom' }),
      await createSupplier(client, user.token, reseller.id, { platform: 'platform_b' }),
    ] as [SupplierFixture, SupplierFixture];
    for (const supplier of suppliers) sandbox.setFaults(supplier.shopDomain, { latencyMs: SUPPLIER_LATENCY_MS });
    shops.push({ reseller, suppliers });
  }
});

afterAll(async () => {
  await run?.close();
});

describe('two SIGKILLs of the whole service mid-stream', () => {
  it('loses no order, completes every job and places no duplicate', async () => {
    const orders = shops.flatMap((shop, s) =>
      Array.from({ length: ORDERS_PER_SHOP }, (_, i) => ({
        shop,
        payload: sandbox.buildOrderPayload('platform_a', {
          id: 900_000_000 + s * 10_000 + i,
          lines: [
            { sku: `A-${i}`, title: 'Anvil', vendor: shop.suppliers[0].vendorTag, quantity: 1 + (i % 3), price: '12.50' },
            { sku: `B-${i}`, title: 'Bolt', vendor: shop.suppliers[1].vendorTag, quantity: 2, price: '3.99' },
          ],
        }),
      })),
    );

    let accepted = 0;
    const stream = mapLimit(orders, 6, async ({ shop, payload }) => {
      const result = await deliverUntilAccepted({
        url: () => `${client.baseUrl}/v1/orders/webhook`,
        shopDomain: shop.reseller.shopDomain,
        secret: shop.reseller.webhookSecret,
        topic: 'orders/create',
        payload,
      });
      accepted++;
      // A steady stream rather than one burst, so the kills land in the middle of it.
      await new Promise((resolve) => setTimeout(resolve, 100));
      return result;
    });

    const crash = async (afterAccepted: number, newSupplierOrders: number) => {
      const baseline = supplierOrderCount();
      await waitFor(async () => accepted >= afterAccepted && supplierOrderCount() >= baseline + newSupplierOrders, 60_000, `${afterAccepted} accepted orders`);
      const clusterDir = path.join(dataDir, 'postgres');
      const pid = postmasterPid(clusterDir);
      const supplierOrdersBefore = supplierOrderCount();
      await service.kill();
      const postmasterDead = pid !== null && (await waitFor(async () => !isAlive(pid), 5_000, 'the postmaster to die').catch(() => false));
      kills.push({ afterAccepted: accepted, supplierOrdersBefore, postmasterPid: pid, postmasterDead });
      // The stale postmaster.pid (and PostgreSQL's shared memory) is left behind for the restart to cope with.
      expect(postmasterPid(clusterDir)).toBe(pid);
      await service.start();
      return Date.now();
    };
    await crash(30, 8);
    const lastRestartAt = await crash(70, 4);

    deliveries.push(...(await stream));
    expect(kills).toHaveLength(2);
    for (const kill of kills) {
      expect(kill.postmasterPid, 'the embedded PostgreSQL was running').not.toBeNull();
      expect(kill.postmasterDead, 'SIGKILL took PostgreSQL down with the service').toBe(true);
      // The kill came while orders were still arriving and still being placed.
      expect(kill.afterAccepted).toBeLessThan(ORDERS);
      expect(kill.supplierOrdersBefore).toBeLessThan(JOBS);
    }
    // The platform had to redeliver: some deliveries met a dead or restarting service.
    expect(deliveries.some((delivery) => delivery.attempts.length > 1)).toBe(true);

    // Every order accepted, with one job per supplier.
    for (const delivery of deliveries) {
      expect(delivery.accepted.status).toBe(200);
      expect(delivery.accepted.body.syncJobIds).toHaveLength(2);
    }

    // Every job completed; the message of each job too (nothing left active, retrying or failed).
    const url = databaseUrl();
    await waitFor(
      async () => {
        const [row] = await queryRows<{ done: string }>(url, `select count(*) filter (where status = 'completed') as done from sync_jobs`);
        return Number(row!.done) === JOBS;
      },
      150_000,
      `all ${JOBS} sync jobs completed`,
    );
    // Orders a killed worker was placing are taken up again once their heartbeat lapses (10 s) and
    // the supervisor notices (every 10 s): well within a minute of the restart.
    const recoveredInMs = Date.now() - lastRestartAt;
    expect(recoveredInMs).toBeLessThan(45_000);
    const jobs = await queryRows<{ id: string; source_store_id: string; external_order_id: string; status: string; attempts: number; source_order_id: string }>(
      url,
      'select id, source_store_id, external_order_id, status, attempts, source_order_id from sync_jobs',
    );
    expect(jobs).toHaveLength(JOBS);
    // Attempts bounded: a job a killed worker held counts that attempt as lost, never more than the policy's 1 + 3.
    const outOfBound = jobs.filter((job) => job.attempts < 1 || job.attempts > MAX_AUTO_RETRIES + 1);
    expect(outOfBound, 'jobs whose attempts are outside 1..4').toEqual([]);
    expect(new Set(jobs.map((job) => `${job.external_order_id}/${job.source_store_id}`)).size).toBe(JOBS);
    const deliveredIds = new Set(deliveries.flatMap((delivery) => delivery.accepted.body.syncJobIds as string[]));
    expect(new Set(jobs.map((job) => job.id))).toEqual(deliveredIds);
    await waitFor(async () => {
      const states = await queryRows<{ state: string; count: string }>(url, `select state, count(*) from pgboss.job where name = 'sync-job.process' group by state`);
      return states.length === 1 && states[0]!.state === 'completed' ? states : null;
    }, 30_000, 'every queue message completed');

    // Exactly one order per supplier per reseller order, and it is the one the job recorded.
    for (const shop of shops) {
      for (const supplier of shop.suppliers) {
        const received = sandbox.ordersFor(supplier.shopDomain);
        const ownJobs = jobs.filter((job) => job.source_store_id === supplier.id);
        expect(ownJobs).toHaveLength(ORDERS_PER_SHOP);
        expect(received, `orders received by ${supplier.platform} supplier`).toHaveLength(ORDERS_PER_SHOP);
        expect(new Set(received.map((order) => order.idempotencyKey))).toEqual(new Set(ownJobs.map((job) => `sync-job:${job.id}`)));
        const byKey = new Map(received.map((order) => [order.idempotencyKey, String(order.id)]));
        for (const job of ownJobs) expect(job.source_order_id).toBe(byKey.get(`sync-job:${job.id}`));
      }
    }

    // The database came back after each SIGKILL, and the service started cleanly every time.
    const logged = service.lines.map((line) => {
      try {
        return JSON.parse(line) as { msg?: string };
      } catch {
        return {};
      }
    });
    expect(logged.filter((line) => line.msg === 'embedded PostgreSQL started')).toHaveLength(3);
    expect(logged.filter((line) => line.msg === 'start-up failed')).toHaveLength(0);

    // And it still shuts down gracefully afterwards.
    expect(await service.stop()).toBe(0);
  });
});

itLeaksNoSecret();
