/**
 * Review 1: dismissing an entry of the to-do list (POST …/divergences/{id}/dismiss) is an operator
 * action with a lasting effect (the entry is never raised again for its job and type: a dead job,
 * an order shipped after the customer cancelled). Like every other operator action (retries,
 * reconcile, divergence checks) it must leave an audit entry saying who did it.
 */
import { expect } from 'vitest';
import { test } from './support/fixtures.ts';
import { auditEntries, openReseller, placeOrders, type Target } from './support/reconciliation.ts';
import { waitFor } from './support/wait.ts';

test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

it('dismissing a divergence is audited with who dismissed it', async ({ sandbox, target }) => {
  const reseller = await openReseller(sandbox, target, 'platform_a');
  sandbox.setFaults(reseller.supplier.shopDomain, { alwaysFail: true, status: 500 });
  await placeOrders(sandbox, reseller, 1, 'deliver');
  const base = `/v1/reseller_stores/${reseller.store.id}/divergences`;
  const entry = await waitFor(
    async () => {
      const response = await target.api.get(base, { token: reseller.user.token });
      return response.body.data?.find((candidate: any) => candidate.type === 'job_dead');
    },
    30_000,
    'the job_dead entry',
  );

  const dismissed = await target.api.post(`${base}/${entry.id}/dismiss`, { token: reseller.user.token });
  expect(dismissed.status, JSON.stringify(dismissed.body)).toBe(200);
  expect(await auditEntries(reseller, 'divergence.dismissed')).toEqual([
    { resource_id: entry.id, metadata: expect.objectContaining({ type: 'job_dead', syncJobId: entry.syncJobId }) },
  ]);
  // Dismissing it again changes nothing and records nothing more.
  expect((await target.api.post(`${base}/${entry.id}/dismiss`, { token: reseller.user.token })).status).toBe(200);
  expect(await auditEntries(reseller, 'divergence.dismissed')).toHaveLength(1);
});
