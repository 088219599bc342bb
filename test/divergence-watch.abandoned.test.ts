/**
 * With DIVERGENCE_INTERVAL_MS=0 no scheduling turn ever looks at a store, so a pass whose process was
 * killed (kill -9 mid-pass: the row `running` with a lease nobody renews, its queue message `active`)
 * showed `running` until the store's next POST …/divergence_checks. Reconciliation has the same case
 * covered (RECONCILE_INTERVAL_MS=0: its worker fails abandoned runs at SWEEP_INTERVAL_MS); the watch
 * now does the same for its passes.
 *
 * The kill is reproduced by the state it leaves: the API alone requests the pass; then the pass is
 * marked taken with a lease already expired and its message active, exactly what a worker that took
 * it and died leaves behind; only then is a worker started.
 */
import { expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { finishedPass, openTenant, requestCheck, type Target } from './support/watch.ts';

test.override('serviceEnv', { ROLE: 'api', DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SWEEP_INTERVAL_MS: '200' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

it('a pass whose worker was killed is failed as abandoned without another check', async ({ sandbox, target, startWorker }) => {
  const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
  const id = await requestCheck(tenant);
  await queryRows(target.databaseUrl, `update watch_passes set takes = 1, lease_expires_at = now() - interval '1 second' where id = $1`, [id]);
  await queryRows(target.databaseUrl, `update pgboss.job set state = 'active', started_on = now() where name = 'divergence-watch.pass' and data->>'watchPassId' = $1`, [id]);

  await startWorker();
  const pass = await finishedPass(tenant, id, 15_000);

  expect(pass.status).toBe('failed');
  expect(pass.error).toContain('Abandoned');
  expect(sandbox.requestsFor(tenant.reseller.shopDomain).filter((request) => request.method === 'GET')).toEqual([]);
  // The store can be checked again at once.
  expect(await requestCheck(tenant)).toMatch(/^\w+/);
});
