/**
 * With RECONCILE_INTERVAL_MS=0 no scheduling turn ever looks at a store, so a run whose process was
 * killed (kill -9 mid-run: the row `running` with a lease nobody renews, its queue message `active`)
 * used to show `running` until the store's next POST …/reconcile. The worker's sweep of abandoned
 * runs (at SWEEP_INTERVAL_MS) now fails it.
 *
 * The kill is reproduced by the state it leaves: the API alone requests the run; then the run is
 * marked taken with a lease already expired and its message active, exactly what a worker that took
 * it and died leaves behind; only then is a worker started.
 */
import { expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { finishedRun, openReseller, reconcile } from './support/reconciliation.ts';

test.override('serviceEnv', { ROLE: 'api', RECONCILE_INTERVAL_MS: '0', RECONCILE_GRACE_MS: '0', SWEEP_INTERVAL_MS: '200' });

test('a run whose worker was killed is failed as abandoned without another POST', async ({ service, sandbox, startWorker }) => {
  const reseller = await openReseller(sandbox, { api: service.api, url: service.url, databaseUrl: service.databaseUrl }, 'platform_a');
  const id = await reconcile(reseller);
  await queryRows(service.databaseUrl, `update reconciliation_runs set takes = 1, lease_expires_at = now() - interval '1 second' where id = $1`, [id]);
  await queryRows(service.databaseUrl, `update pgboss.job set state = 'active', started_on = now() where name = 'reconciliation.run' and data->>'reconciliationId' = $1`, [id]);

  await startWorker();
  const run = await finishedRun(reseller, id, 15_000);

  expect(run.status).toBe('failed');
  expect(JSON.stringify(run)).toContain('Abandoned');
  expect(sandbox.requestsFor(reseller.store.shopDomain).filter((request) => request.method === 'GET')).toEqual([]);
});
