/**
 * The divergence watch on its schedule (DIVERGENCE_INTERVAL_MS), with two worker processes on one
 * database: passes over a store never overlap, both processes run passes, and every shipment the
 * suppliers made without a webhook reaches the storefront exactly once. And its metrics.
 */
import { expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { fulfillmentsOf, openTenant, placeOrder, type Target, type Tenant } from './support/watch.ts';

const INTERVAL_MS = 1_000;
test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: String(INTERVAL_MS), RECONCILE_INTERVAL_MS: '0' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

interface PassRow {
  reseller_store_id: string;
  status: string;
  started_at: Date;
  finished_at: Date | null;
}

it('two worker processes: passes over a store never overlap, and each shipment is pushed once', async ({ sandbox, target, service, startWorker }) => {
  const worker = await startWorker();
  const tenants: Tenant[] = [];
  for (let i = 0; i < 3; i++) tenants.push(await openTenant(sandbox, target, i === 1 ? 'custom' : 'platform_a', ['platform_a', 'platform_b', 'custom']));
  const placed = [];
  for (const tenant of tenants) for (const supplier of tenant.suppliers) placed.push({ tenant, order: await placeOrder(sandbox, tenant, supplier) });
  for (const [index, { order }] of placed.entries()) sandbox.shipOrder(order.supplier.shopDomain, order.supplier.platform, order.sourceOrderId, { trackingNumbers: [`SCHED-${index}`] });

  for (const { tenant, order } of placed) {
    await waitFor(async () => (await fulfillmentsOf(tenant, order.jobId))[0]?.status === 'completed', 30_000, `tracking of ${order.jobId}`);
  }
  // A few more passes over what is already repaired.
  const passesNow = async () => (await queryRows<{ count: string }>(target.databaseUrl, "select count(*) from watch_passes where status = 'succeeded'"))[0]!.count;
  const before = Number(await passesNow());
  await waitFor(async () => Number(await passesNow()) >= before + 6, 30_000, 'more passes');

  for (const { tenant, order } of placed) expect(await fulfillmentsOf(tenant, order.jobId)).toHaveLength(1);
  for (const tenant of tenants) expect(sandbox.fulfillmentsFor(tenant.reseller.shopDomain)).toHaveLength(3);

  const passes = await queryRows<PassRow>(target.databaseUrl, 'select reseller_store_id, status, started_at, finished_at from watch_passes order by started_at');
  for (const tenant of tenants) {
    const own = passes.filter((pass) => pass.reseller_store_id === tenant.reseller.id && pass.finished_at !== null);
    expect(own.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < own.length; i++) expect(new Date(own[i]!.started_at).getTime()).toBeGreaterThanOrEqual(new Date(own[i - 1]!.finished_at!).getTime());
  }
  expect(passes.filter((pass) => pass.status === 'failed')).toEqual([]);
  // Which process takes each pass is not fixed (one may take them all on a loaded machine): the
  // guarantee is once and never overlapping, checked above.
  const ran = (logs: string[]) => logs.some((line) => line.includes('divergence-watch pass finished'));
  expect(ran(service.logs) || ran(worker.logs), 'a process ran passes').toBe(true);

  // The gauges read the database; the counters are each process's own.
  const metrics = await (await fetch(`${service.url}/metrics`)).text();
  if (ran(service.logs)) expect(metrics).toMatch(/^divergence_watch_passes_total\{outcome="succeeded"\} [1-9]\d*$/m);
  expect(metrics).toMatch(/^divergences_open\{type="stale"\} 0$/m);
  expect(metrics).toMatch(/^divergence_oldest_open_age_seconds 0$/m);
});
