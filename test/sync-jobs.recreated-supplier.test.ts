/**
 * A supplier record deleted and re-created for the same shop (the case of
 * test/fulfillments.recreated-supplier.test.ts and test/cancellations.recreated-supplier.test.ts),
 * seen from the deleted record's sync jobs that never learnt their supplier order. A job whose
 * create answer was lost (the supplier order may exist) ended `dead`; its attempt loaded the job's
 * source store "unless deleted" and failed with "the source store was deleted", automatic retry or
 * operator's retry alike: the shipments held for it waited for ever, and the reseller, seeing a dead
 * job, could place the order again by hand (a second supplier order). The active record of the same
 * supplier (same reseller store, owner, platform and shop domain) now answers for the job: its
 * credentials and pacing, the deleted record's vendor tag and pricing; the lookup by reference runs
 * first, so the order the lost answer left is found and recorded, never created twice.
 * Real service, queue, database, sandbox and webhooks.
 */
import { describe, expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { getJob, waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { auditOf, check, deleteSupplier, fulfillmentsOf, openTenant, orderWithAnswersLost, orderWithJobDead, pushedTracking, recreateSupplier, resellerPlatformFor, type Supplier, type Target, type Tenant } from './support/watch.ts';
import { sendWebhook } from './sandbox/server.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';

test.override('serviceEnv', { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '500' });

const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

type Sandbox = Parameters<typeof openTenant>[0];

const DELETED = 'the source store was deleted';

async function retry(tenant: Tenant, jobId: string): Promise<void> {
  const response = await tenant.target.api.post(`/v1/sync_jobs/${jobId}/retry`, { token: tenant.user.token });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
}

/** The job once its retries are spent or it completed. */
const settledJob = (tenant: Tenant, jobId: string, attempts: number) =>
  waitForJob(tenant.target.api, tenant.user.token, jobId, (job) => job.status === 'completed' || (job.status === 'dead' && job.attempts >= attempts), 30_000, 'the retried job settled');

describe.each(['custom', 'platform_a'] as const)("a %s supplier's deleted record whose job's create answer was lost", (platform) => {
  it("an operator's retry finds the order through the record that replaced it: recorded once, the held shipment pushed", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, resellerPlatformFor(platform), [platform]);
    const former = tenant.suppliers[0]!;
    const lost = await orderWithAnswersLost(sandbox, tenant, former);
    const again = await recreateSupplier(tenant, former);
    // The supplier ships the order; its webhook lost, a pass holds the shipment for the job in doubt.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    sandbox.shipOrder(again.shopDomain, platform, lost.sourceOrderId, { trackingNumbers: ['1Z-RETRIED'] });
    expect(await check(tenant)).toMatchObject({ status: 'succeeded', error: null });
    expect(await queryRows(target.databaseUrl, 'select source_store_id from held_fulfillments where reseller_store_id = $1', [tenant.reseller.id])).toEqual([{ source_store_id: former.id }]);
    // The new record's token is not the one the create was sent with: no Idempotency-Key replay to count on.
    sandbox.forgetIdempotencyKeys(again.shopDomain);

    await retry(tenant, lost.jobId);
    const job = await settledJob(tenant, lost.jobId, 8);
    expect(job, JSON.stringify(job)).toMatchObject({ status: 'completed', sourceOrderId: lost.sourceOrderId, sourceStoreId: former.id });
    expect(sandbox.ordersFor(again.shopDomain)).toHaveLength(1);
    // The job stays the deleted record's: its audit names it, and the record whose token the attempt went through.
    expect(
      (await auditOf(tenant, 'sync_job.completed')).map((entry) => ({ job: entry.resource_id, store: entry.metadata.sourceStoreId, answeredBy: entry.metadata.answeredBySourceStoreId })),
    ).toEqual([{ job: lost.jobId, store: former.id, answeredBy: again.id }]);
    // Its first death, attempted through its own record, names no other.
    expect((await auditOf(tenant, 'sync_job.dead')).map((entry) => entry.metadata)).toEqual([expect.not.objectContaining({ answeredBySourceStoreId: expect.anything() })]);

    const [pushed] = await pushedTracking(sandbox, tenant, 1);
    expect(JSON.stringify(pushed!.body)).toContain('1Z-RETRIED');
    await waitFor(async () => (await fulfillmentsOf(tenant, lost.jobId)).length === 1, 20_000, 'the held shipment claimed by the job');
  }, 90_000);
});

/** A webhook of the supplier's, sent to its record's own URL. */
const supplierSends = (tenant: Tenant, supplier: Supplier, topic: string, payload: unknown) =>
  sendWebhook({ targetUrl: `${tenant.target.url}${FULFILLMENTS_PATH}/${supplier.id}`, shopDomain: supplier.shopDomain, secret: supplier.secret, topic, payload });

describe("the supplier's webhooks, posted to the new record, for a deleted record's job in doubt (the watch off)", () => {
  it('a shipment is held for that job and pushed once the operator\'s retry finds the order', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const former = tenant.suppliers[0]!;
    const lost = await orderWithAnswersLost(sandbox, tenant, former);
    const again = await recreateSupplier(tenant, former);
    const [body] = sandbox.shipOrder(again.shopDomain, 'custom', lost.sourceOrderId, { trackingNumbers: ['1Z-HELD-FOR-FORMER'] });
    const delivered = await supplierSends(tenant, again, 'fulfillments/create', body);
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
    expect(await queryRows(target.databaseUrl, 'select source_store_id from held_fulfillments where reseller_store_id = $1', [tenant.reseller.id])).toEqual([{ source_store_id: former.id }]);

    await retry(tenant, lost.jobId);
    expect(await settledJob(tenant, lost.jobId, 8)).toMatchObject({ status: 'completed', sourceOrderId: lost.sourceOrderId });
    const [pushed] = await pushedTracking(sandbox, tenant, 1);
    expect(JSON.stringify(pushed!.body)).toContain('1Z-HELD-FOR-FORMER');
    await waitFor(async () => (await fulfillmentsOf(tenant, lost.jobId)).length === 1, 20_000, 'the held shipment claimed by the job');
  }, 90_000);

  it("the supplier's own cancellation is held for that job and recorded on it once the operator's retry finds the order", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const former = tenant.suppliers[0]!;
    const lost = await orderWithAnswersLost(sandbox, tenant, former);
    const again = await recreateSupplier(tenant, former);
    const cancelled = await supplierSends(tenant, again, 'orders/cancelled', { id: lost.sourceOrderId, cancelledAt: new Date().toISOString(), reason: 'discontinued' });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(await queryRows(target.databaseUrl, 'select source_store_id from held_supplier_cancellations where reseller_store_id = $1', [tenant.reseller.id])).toEqual([{ source_store_id: former.id }]);

    await retry(tenant, lost.jobId);
    expect(await settledJob(tenant, lost.jobId, 8)).toMatchObject({ status: 'completed', sourceOrderId: lost.sourceOrderId });
    const job = await waitForJob(target.api, tenant.user.token, lost.jobId, (current) => current.supplierCancelledAt !== null, 20_000, 'the held cancellation claimed by');
    expect(job.supplierCancelReason).toContain('discontinued');
  }, 90_000);
});

describe('a job of a deleted supplier record that nothing replaced', () => {
  it('still fails: the source store was deleted, and nothing is created', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const former = tenant.suppliers[0]!;
    const lost = await orderWithAnswersLost(sandbox, tenant, former);
    await deleteSupplier(tenant, former);
    sandbox.forgetIdempotencyKeys(former.shopDomain);

    await retry(tenant, lost.jobId);
    const job = await settledJob(tenant, lost.jobId, 8);
    expect(job).toMatchObject({ status: 'dead', sourceOrderId: null, errorMessage: DELETED });
    expect(sandbox.ordersFor(former.shopDomain)).toHaveLength(1);
    // No record answered for it: its audit entries name none.
    const deaths = await auditOf(tenant, 'sync_job.dead');
    expect(deaths).toHaveLength(2);
    for (const entry of deaths) expect(entry.metadata).not.toHaveProperty('answeredBySourceStoreId');
  }, 60_000);
});

describe("another tenant's record of the same supplier", () => {
  it("never answers for a deleted record's job: another user's, or another reseller store's of the same user", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const former = tenant.suppliers[0]!;
    const lost = await orderWithAnswersLost(sandbox, tenant, former);
    await deleteSupplier(tenant, former);
    const stranger = await registerUser(target.api);
    const strangerStore = await createResellerStore(target.api, stranger.token);
    await createSourceStore(target.api, stranger.token, strangerStore.id, { platform: 'custom', shopDomain: former.shopDomain, vendorTag: former.vendorTag });
    const ownOther = await createResellerStore(target.api, tenant.user.token);
    await createSourceStore(target.api, tenant.user.token, ownOther.id, { platform: 'custom', shopDomain: former.shopDomain, vendorTag: former.vendorTag });
    sandbox.forgetIdempotencyKeys(former.shopDomain);

    await retry(tenant, lost.jobId);
    const job = await settledJob(tenant, lost.jobId, 8);
    expect(job).toMatchObject({ status: 'dead', sourceOrderId: null, errorMessage: DELETED });
    expect(sandbox.ordersFor(former.shopDomain)).toHaveLength(1);
  }, 60_000);
});

describe('a job of a deleted supplier record that placed nothing (its token refused)', () => {
  it("a retry places it once through the record that replaced it, at the deleted record's pricing", async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const former = tenant.suppliers[0]!;
    // The old token is refused: nothing is created, the job dies. The reseller re-creates the supplier with a new token (and another markup).
    const { jobId } = await orderWithJobDead(sandbox, tenant, former, { alwaysFail: true, status: 401 });
    expect(sandbox.ordersFor(former.shopDomain)).toEqual([]);
    const again = await recreateSupplier(tenant, former, { pricingConfig: { type: 'percentage', value: 100 } });

    await retry(tenant, jobId);
    const job = await settledJob(tenant, jobId, 5);
    expect(job, JSON.stringify(job)).toMatchObject({ status: 'completed', sourceStoreId: former.id });
    const [placed, ...more] = sandbox.ordersFor(again.shopDomain);
    expect(more).toEqual([]);
    expect(String(placed!.id)).toBe(job.sourceOrderId);
    // 30.00 at the deleted record's 25 % markup (the new record's 100 % would make it 15.00).
    expect(JSON.stringify(placed!.body)).toContain('"24.00"');
    expect(JSON.stringify(placed!.body)).not.toContain('"15.00"');
    const [completed, ...others] = await auditOf(tenant, 'sync_job.completed');
    expect(others).toEqual([]);
    expect(completed!.metadata).toMatchObject({ sourceStoreId: former.id, answeredBySourceStoreId: again.id, sourceOrderId: job.sourceOrderId });
  }, 60_000);

  it('places nothing when the reseller already re-placed the order through the new record by hand', async ({ sandbox, target }) => {
    const tenant = await openTenant(sandbox, target, 'platform_a', ['custom']);
    const former = tenant.suppliers[0]!;
    const { jobId, order } = await orderWithJobDead(sandbox, tenant, former, { alwaysFail: true, status: 401 });
    const again = await recreateSupplier(tenant, former);
    const manual = await target.api.post('/v1/sync_jobs', { token: tenant.user.token, body: { source_store_id: again.id, external_order_id: String(order.id) } });
    expect(manual.status, JSON.stringify(manual.body)).toBe(201);
    await waitForJob(target.api, tenant.user.token, manual.body.id, (job) => job.status === 'completed', 30_000, 'the manual job placed');

    await retry(tenant, jobId);
    const job = await settledJob(tenant, jobId, 8);
    expect(job.status).toBe('dead');
    expect(job.errorMessage).toContain(`has its own job ${manual.body.id} for this order`);
    expect(sandbox.ordersFor(again.shopDomain)).toHaveLength(1);
    expect((await getJob(target.api, tenant.user.token, manual.body.id)).sourceOrderId).toBe(String(sandbox.ordersFor(again.shopDomain)[0]!.id));
    // The old job's first death went through its own record; its second, through the new one. The manual job is the new record's own.
    const deaths = (await auditOf(tenant, 'sync_job.dead')).filter((entry) => entry.resource_id === jobId).map((entry) => entry.metadata);
    expect(deaths).toEqual([
      expect.not.objectContaining({ answeredBySourceStoreId: expect.anything() }),
      expect.objectContaining({ sourceStoreId: former.id, answeredBySourceStoreId: again.id }),
    ]);
    const manualCompleted = (await auditOf(tenant, 'sync_job.completed')).filter((entry) => entry.resource_id === manual.body.id).map((entry) => entry.metadata);
    expect(manualCompleted).toEqual([expect.objectContaining({ sourceStoreId: again.id })]);
    expect(manualCompleted[0]).not.toHaveProperty('answeredBySourceStoreId');
  }, 60_000);
});
