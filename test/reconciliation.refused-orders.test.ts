/**
 * Review 1: an order that reconciliation cannot route (its webhook would have been refused) must
 * leave the same trace its refused webhook leaves: an `order.refused` audit entry naming it, once.
 * Otherwise an order whose webhook was lost and which breaks a limit never reaches a supplier and
 * nobody is told (operations.md: "every order … reaches its suppliers … or an operator is told";
 * reconciliation routes "exactly as if its webhook had arrived: … same audit").
 */
import { describe, expect } from 'vitest';
import { PLATFORMS } from '../src/orders/types.ts';
import { test } from './support/fixtures.ts';
import { auditEntries, finishedRun, idOf, jobsByOrder, openReseller, orderOf, placeOrders, reconcile, type Target } from './support/reconciliation.ts';

test.override('serviceEnv', { RECONCILE_INTERVAL_MS: '0', RECONCILE_GRACE_MS: '0' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

describe.each(PLATFORMS)('%s reseller store', (platform) => {
  it('an order reconciliation skips as invalid (its webhook lost) is audited order.refused, once', async ({ sandbox, target }) => {
    const reseller = await openReseller(sandbox, target, platform);
    const [good] = await placeOrders(sandbox, reseller, 1, 'drop');
    // 2,000,000 items: beyond MAX_QUANTITY, so its webhook would have been refused with 400 and audited.
    const text = JSON.stringify(orderOf(sandbox, reseller));
    expect(text.match(/"quantity":2\b/g)).toHaveLength(1);
    const invalid = JSON.parse(text.replace(/"quantity":2\b/, '"quantity":2000000'));
    sandbox.seedOrder(reseller.store.shopDomain, platform, invalid);

    const run = await finishedRun(reseller, await reconcile(reseller));
    expect(run).toMatchObject({ status: 'succeeded', ordersSeen: 2, ordersRouted: 1 });
    expect([...(await jobsByOrder(reseller)).keys()]).toEqual([idOf(good!)]);

    const refused = await auditEntries(reseller, 'order.refused');
    expect(refused).toEqual([{ resource_id: idOf(invalid), metadata: expect.objectContaining({ reason: expect.stringMatching(/quantity/), reconciliationId: run.id }) }]);

    // The next run lists it again (the watermark's overlap): the reseller was told already.
    expect(await finishedRun(reseller, await reconcile(reseller))).toMatchObject({ status: 'succeeded', ordersSeen: 2, ordersRouted: 0 });
    expect(await auditEntries(reseller, 'order.refused')).toHaveLength(1);
  });
});
