/**
 * Review 1: an order a reconciliation run lists as cancelled, and that was never routed, is the
 * storefront's cancellation signal for it, as its lost orders/cancelled webhook would have been. If
 * the order's orders/create webhook arrives after the run (a platform retry, hours later), the order
 * must be routed as cancelled (order-changes.md: "if its orders/create arrives later, the order is
 * routed as cancelled: its jobs end at once as `not_placed` and nothing reaches a supplier"). The
 * divergence watch cannot catch it: it ignores reseller orders it does not know when it lists them,
 * and its watermark then moves past them.
 */
import { describe, expect } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { PLATFORMS } from '../src/orders/types.ts';
import { test } from './support/fixtures.ts';
import { auditEntries, finishedRun, idOf, openReseller, placeOrders, reconcile, routedOrders, type Target } from './support/reconciliation.ts';
import { waitFor } from './support/wait.ts';

test.override('serviceEnv', { RECONCILE_INTERVAL_MS: '0', RECONCILE_GRACE_MS: '0', DIVERGENCE_INTERVAL_MS: '0' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

describe.each(PLATFORMS)('%s reseller store', (platform) => {
  it('an order a run lists cancelled is routed as cancelled when its orders/create webhook comes late: nothing reaches the supplier', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    // The orders/create delivery is held back (the platform will retry it); the customer cancels, and that webhook is lost.
    const [order] = await placeOrders(sandbox, reseller, 1, 'hold');
    sandbox.cancelOrder(reseller.store.shopDomain, platform, order!.id as number | string);

    const run = await finishedRun(reseller, await reconcile(reseller));
    expect(run).toMatchObject({ status: 'succeeded', ordersSeen: 1, ordersRouted: 0 });
    expect(await routedOrders(reseller)).toEqual([]);

    // The platform's retry of orders/create arrives after the run.
    const [late] = await sandbox.releaseWebhooks(reseller.store.shopDomain);
    expect(late!.status, JSON.stringify(late!.body)).toBe(200);
    const [jobId] = (late!.body as { syncJobIds: string[] }).syncJobIds;
    const job = await waitFor(
      async () => {
        const response = await target.api.get(`/v1/sync_jobs/${jobId}`, { token: reseller.user.token });
        const ended = (status: string) => ['completed', 'dead'].includes(status);
        return ended(response.body.status) && response.body.cancellations.every((cancellation: any) => ended(cancellation.status)) ? response.body : null;
      },
      20_000,
      'the job to end',
    );
    expect(job).toMatchObject({ status: 'completed', sourceOrderId: null, attempts: 0 });
    expect(job.cancellations[0]).toMatchObject({ status: 'completed', outcome: 'not_placed' });
    await delay(500);
    expect(sandbox.ordersFor(reseller.supplier.shopDomain)).toEqual([]);
    // Recorded as the storefront's cancellation would have been (order.cancelled, routed = false).
    expect(await auditEntries(reseller, 'order.cancelled')).toEqual([
      { resource_id: idOf(order!), metadata: expect.objectContaining({ routed: false, source: 'reconciliation', reconciliationId: run.id }) },
    ]);

    // Listed again by the next run (the watermark's overlap): recorded once.
    expect(await finishedRun(reseller, await reconcile(reseller))).toMatchObject({ status: 'succeeded', ordersRouted: 0 });
    expect(await auditEntries(reseller, 'order.cancelled')).toHaveLength(1);
  });
});
