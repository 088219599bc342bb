/**
 * Issue 24: a kill -9 in the middle of a divergence-watch pass. The service runs as its own process
 * on its embedded PostgreSQL, with passes every 2 s; three suppliers (one per platform) ship and
 * cancel placed orders with no webhook, and answer slowly, so a pass is still listing and repairing
 * when the whole process group (node and PostgreSQL) is SIGKILLed. After the restart every shipment
 * reaches the storefront exactly once, every supplier cancellation is listed once, the killed pass
 * is failed as abandoned (its lease expired) rather than left running, and no watermark is past
 * what a pass saw.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendWebhook, type Sandbox } from '../sandbox/server.ts';
import { queryRows } from '../support/database.ts';
import { waitFor } from '../support/wait.ts';
import type { ChildService } from '../support/child-service.ts';
import { orderUpdatedAt } from '../sandbox/updated.ts';
import type { SandboxState } from '../sandbox/state.ts';
import { startCrashableService, type CrashableService } from './support/crashable.ts';
import { ChaosClient, createReseller, createSupplier, registerUser, type ResellerFixture, type SupplierFixture } from './support/client.ts';

const ORDERS_PER_SUPPLIER = 12;
const SHIPPED_PER_SUPPLIER = 8;
const SUPPLIER_LATENCY_MS = 700;

let run: CrashableService;
let sandbox: Sandbox;
let service: ChildService;
let dataDir: string;
let client: ChaosClient;
let reseller: ResellerFixture;
let suppliers: SupplierFixture[] = [];

const databaseUrl = () => run.databaseUrl();

beforeAll(async () => {
  run = await startCrashableService('watch', { DIVERGENCE_INTERVAL_MS: '2000', RECONCILE_INTERVAL_MS: '0' });
  ({ sandbox, service, dataDir, client } = run);
  const user = await registerUser(client);
  reseller = await createReseller(client, user.token);
  for (const platform of ['custom', 'platform_b', 'platform_a']) suppliers.push(await createSupplier(client, user.token, reseller.id, { platform }));
});

afterAll(async () => {
  await run?.close();
});

describe('a SIGKILL of the whole service mid-pass', () => {
  it('pushes every shipment once and lists every supplier cancellation once after the restart', async () => {
    // Orders routed by their webhooks and placed.
    let n = 0;
    for (const supplier of suppliers) {
      for (let i = 0; i < ORDERS_PER_SUPPLIER; i++) {
        const payload = sandbox.buildOrderPayload('platform_a', { id: 950_000_000 + n++, lines: [{ sku: `W-${n}`, title: 'Watched', vendor: supplier.vendorTag, quantity: 1, price: '9.00' }] });
        sandbox.seedOrder(reseller.shopDomain, 'platform_a', payload);
        const delivered = await sendWebhook({ targetUrl: `${client.baseUrl}/v1/orders/webhook`, shopDomain: reseller.shopDomain, secret: reseller.webhookSecret, topic: 'orders/create', payload });
        expect(delivered.status).toBe(200);
      }
    }
    const url = databaseUrl();
    const total = ORDERS_PER_SUPPLIER * suppliers.length;
    const jobs = await waitFor(async () => {
      const rows = await queryRows<{ id: string; source_store_id: string; source_order_id: string | null; status: string }>(url, 'select id, source_store_id, source_order_id, status from sync_jobs');
      return rows.length === total && rows.every((row) => row.status === 'completed') ? rows : null;
    }, 60_000, 'every job placed');

    // The suppliers ship and cancel with no webhook, and answer slowly from now on.
    const shippedNumbers: string[] = [];
    const cancelledJobs: string[] = [];
    for (const supplier of suppliers) {
      const own = jobs.filter((job) => job.source_store_id === supplier.id);
      own.forEach((job, index) => {
        if (index < SHIPPED_PER_SUPPLIER) {
          const number = `KILL-${job.id.slice(-8)}`;
          sandbox.shipOrder(supplier.shopDomain, supplier.platform as never, job.source_order_id!, { trackingNumbers: [number] });
          shippedNumbers.push(number);
        } else {
          sandbox.cancelOrder(supplier.shopDomain, supplier.platform as never, job.source_order_id!);
          cancelledJobs.push(job.id);
        }
      });
      sandbox.setFaults(supplier.shopDomain, { latencyMs: SUPPLIER_LATENCY_MS });
    }

    // Kill once a pass has repaired some but not all.
    const repairedSoFar = async () => Number((await queryRows<{ count: string }>(databaseUrl(), 'select count(*) from fulfillments'))[0]!.count);
    await waitFor(async () => (await repairedSoFar()) >= 2, 60_000, 'a pass under way');
    const before = await repairedSoFar();
    const running = await queryRows<{ id: string }>(url, "select id from watch_passes where status = 'running'");
    expect(before).toBeLessThan(shippedNumbers.length);
    expect(running.length).toBeGreaterThan(0);
    await service.kill();
    await service.start();
    const after = databaseUrl();

    // Every shipment reaches the storefront order once; every cancellation is listed once.
    await waitFor(async () => {
      const rows = await queryRows<{ count: string }>(after, "select count(*) from fulfillments where status = 'completed'");
      return Number(rows[0]!.count) >= shippedNumbers.length;
    }, 150_000, 'every shipment pushed');
    await waitFor(async () => {
      const rows = await queryRows<{ count: string }>(after, "select count(*) from divergences where type = 'supplier_cancelled'");
      return Number(rows[0]!.count) >= cancelledJobs.length;
    }, 60_000, 'every cancellation listed');
    const pushed = sandbox.fulfillmentsFor(reseller.shopDomain).map((fulfillment) => JSON.stringify(fulfillment.body).match(/KILL-[0-9a-f]{8}/)?.[0]);
    expect(pushed.sort()).toEqual([...shippedNumbers].sort());
    const perJob = await queryRows<{ sync_job_id: string; count: string }>(after, 'select sync_job_id, count(*) from fulfillments group by sync_job_id');
    expect(perJob).toHaveLength(shippedNumbers.length);
    expect(perJob.every((row) => row.count === '1')).toBe(true);
    const listed = await queryRows<{ sync_job_id: string }>(after, "select sync_job_id from divergences where type = 'supplier_cancelled' order by sync_job_id");
    expect(listed.map((row) => row.sync_job_id)).toEqual([...cancelledJobs].sort());

    // The killed pass did not stay running: it was failed as abandoned once its lease expired.
    const killed = await waitFor(async () => {
      const rows = await queryRows<{ id: string; status: string; error: string | null }>(after, 'select id, status, error from watch_passes where id = any($1::text[])', [running.map((row) => row.id)]);
      return rows.every((row) => row.status !== 'running') ? rows : null;
    }, 90_000, 'the killed pass to end');
    expect(killed.some((row) => row.status === 'failed' && /Abandoned/.test(row.error ?? ''))).toBe(true);

    // No supplier's watermark is past the newest change its list shows.
    for (const supplier of suppliers) {
      const platform = supplier.platform as 'platform_a' | 'platform_b' | 'custom';
      const newest = Math.max(...(sandbox as unknown as SandboxState).store(supplier.shopDomain).listOrders(platform).map(({ order }) => orderUpdatedAt(platform, order)));
      const [row] = await queryRows<{ watermark: Date }>(after, 'select watermark from watch_watermarks where store_id = $1', [supplier.id]);
      expect(row, `watermark of the ${platform} supplier`).toBeDefined();
      expect(new Date(row!.watermark).getTime()).toBeLessThanOrEqual(newest);
    }
  });
});
