/**
 * Scheduled reconciliation with two processes (API and workers each) on one database: every store
 * is reconciled every RECONCILE_INTERVAL_MS by one process at a time, each lost order is routed
 * once, and a deleted store is no longer reconciled.
 */
import { describe, expect } from 'vitest';
import { PLATFORMS } from '../src/orders/types.ts';
import { ApiClient } from './support/api.ts';
import { createTestDatabase, queryRows } from './support/database.ts';
import { registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import {
  auditEntries,
  idOf,
  jobsByOrder,
  listCalls,
  openReseller,
  placeOrders,
  runsOf,
  supplierOrders,
  type Reseller,
  type Target,
} from './support/reconciliation.ts';
import { startTestProcess } from './support/service.ts';
import { waitFor } from './support/wait.ts';

const INTERVAL_MS = 400;

/** Long enough for a delivered order's webhook to route it first on a slow machine: a run listing it sooner would route it itself. */
const GRACE_MS = 1_500;

test.override('serviceEnv', { RECONCILE_INTERVAL_MS: String(INTERVAL_MS), RECONCILE_GRACE_MS: String(GRACE_MS) });

const it = test
  /** Two processes with every role on one database, started together with the file's environment. */
  .extend('processes', { scope: 'file' }, async ({ processEnv }, { onCleanup }) => {
    const shared = { ...processEnv, DATABASE_URL: await createTestDatabase() };
    const processes = await Promise.all([startTestProcess(shared), startTestProcess(shared)]);
    onCleanup(async () => {
      await Promise.all(processes.map((process) => process.stop()));
    });
    return processes;
  })
  .extend('targets', { scope: 'file' }, ({ processes }): Target[] =>
    processes.map((process) => ({ api: new ApiClient(process.url!), url: process.url!, databaseUrl: process.databaseUrl })));

/** Runs of the store that have finished, oldest first. */
async function finishedRuns(reseller: Reseller) {
  return (await runsOf(reseller)).filter((run) => run.status !== 'running').reverse();
}

describe('two processes reconciling on a schedule', () => {
  it('route each lost order once, one run per store at a time, one list call per run', async ({ sandbox, targets }) => {
    const user = await registerUser(targets[0]!.api);
    // Each store is connected through one process and posts its webhooks to the other.
    const resellers = await Promise.all(PLATFORMS.map((platform, index) => openReseller(sandbox, targets[index % 2]!, platform, user)));
    const lost = await Promise.all(resellers.map((reseller) => placeOrders(sandbox, reseller, 3, 'drop')));
    const delivered = await Promise.all(resellers.map((reseller) => placeOrders(sandbox, reseller, 1, 'deliver')));

    for (const [index, reseller] of resellers.entries()) {
      await supplierOrders(sandbox, reseller, 4);
      // Several more runs after the one that routed the last lost order: none routes them again.
      const runs = await waitFor(async () => {
        const finished = await finishedRuns(reseller);
        let routed = 0;
        const routing = finished.findIndex((run) => (routed += run.ordersRouted) >= 3);
        return routing >= 0 && finished.length - routing > 3 ? finished : null;
      }, 20_000, `three runs of ${reseller.store.platform} after its lost orders were routed`);
      expect(runs.every((run) => run.trigger === 'scheduled' && run.status === 'succeeded')).toBe(true);
      expect(runs.reduce((sum, run) => sum + run.ordersRouted, 0)).toBe(3);

      const ids = [...lost[index]!, ...delivered[index]!].map(idOf);
      const jobs = await jobsByOrder(reseller);
      expect([...jobs.keys()].sort()).toEqual([...ids].sort());
      for (const id of ids) expect(jobs.get(id)).toHaveLength(1);
      expect((await auditEntries(reseller, 'order.reconciled')).map((entry) => entry.resource_id).sort()).toEqual(lost[index]!.map(idOf).sort());
      expect(sandbox.ordersFor(reseller.supplier.shopDomain)).toHaveLength(4);
    }

    // Never two runs of a store at once: their [start, finish] intervals do not overlap.
    const rows = await queryRows<{ reseller_store_id: string; started_at: Date; finished_at: Date | null }>(
      targets[0]!.databaseUrl,
      'select reseller_store_id, started_at, finished_at from reconciliation_runs order by reseller_store_id, started_at',
    );
    for (let i = 1; i < rows.length; i++) {
      if (rows[i]!.reseller_store_id !== rows[i - 1]!.reseller_store_id) continue;
      expect(rows[i - 1]!.finished_at, 'a run started before the previous one finished').not.toBeNull();
      expect(rows[i]!.started_at.getTime()).toBeGreaterThanOrEqual(rows[i - 1]!.finished_at!.getTime());
    }
    // One list call per finished run (each store's orders fit on one page): no run listed twice.
    for (const reseller of resellers) {
      const finished = (await finishedRuns(reseller)).length;
      const calls = listCalls(sandbox, reseller).length;
      expect(calls === finished || calls === finished + 1, `${calls} list calls for ${finished} finished runs`).toBe(true);
    }
    // Which process takes a store's turn is up to who gets the lock first: on a loaded machine one
    // may take them all, so the guarantee checked is the one above (once, never overlapping), not a spread.
  });

  it('stop reconciling a store once it is deleted', async ({ sandbox, targets }) => {
    const user = await registerUser(targets[0]!.api);
    const [kept, deleted] = await Promise.all([openReseller(sandbox, targets[0]!, 'custom', user), openReseller(sandbox, targets[1]!, 'custom', user)]);
    await waitFor(async () => (await finishedRuns(deleted)).length >= 1, 20_000, 'a run of the store to delete');
    expect((await targets[1]!.api.delete(`/v1/reseller_stores/${deleted.store.id}`, { token: user.token })).status).toBe(204);
    // Wait for any run in flight at the deletion to finish, then for three more runs of the other store.
    await waitFor(async () => (await runsOf(deleted)).every((run) => run.status !== 'running'), 20_000, 'the deleted store idle');
    const runsAtDeletion = (await runsOf(deleted)).length;
    const callsAtDeletion = listCalls(sandbox, deleted).length;
    const keptRuns = (await finishedRuns(kept)).length;
    await waitFor(async () => (await finishedRuns(kept)).length >= keptRuns + 3, 20_000, 'three more runs of the other store');
    expect((await runsOf(deleted)).length).toBe(runsAtDeletion);
    expect(listCalls(sandbox, deleted)).toHaveLength(callsAtDeletion);
  });
});
