/**
 * Reconciliation and the divergence watch of stores whose orders are large: a full page of the list
 * (250 platform_a orders of about 36 KB) is over the list-answer bound (8 MiB). Every run and every
 * pass failed at that page, for ever ("answered 200 with a body over 8388608 bytes"): no lost order
 * after it was ever routed, no supplier cancellation or tracking after it ever seen. The page is read
 * again with fewer orders (src/platforms/listing.ts readShrinking), and the run completes.
 */
import { expect } from 'vitest';
import { test } from './support/fixtures.ts';
import { bigOrder } from './support/big-orders.ts';
import { finishedRun, listCalls, openReseller, reconcile, routedOrders, type Target } from './support/reconciliation.ts';
import { check, openTenant } from './support/watch.ts';

test.override('serviceEnv', { RECONCILE_INTERVAL_MS: '0', RECONCILE_GRACE_MS: '0', DIVERGENCE_INTERVAL_MS: '0' });
const it = test.extend('target', { scope: 'file' }, ({ service }): Target => ({ api: service.api, url: service.url, databaseUrl: service.databaseUrl }));

const COUNT = 260;

it('a reconciliation run over a list whose full page is over 8 MiB routes every order and succeeds', async ({ sandbox, target }) => {
  const reseller = await openReseller(sandbox, target, 'platform_a');
  // The customers' orders, their webhooks all lost; no supplier sells their lines (routed to none).
  const ids: string[] = [];
  for (let n = 1; n <= COUNT; n++) {
    const order = bigOrder('platform_a', 7_000_000 + n, new Date(), 'Nobody');
    sandbox.seedOrder(reseller.store.shopDomain, 'platform_a', order);
    ids.push(String(order.id));
  }

  const run = await finishedRun(reseller, await reconcile(reseller), 60_000);

  expect(run).toMatchObject({ status: 'succeeded', ordersSeen: COUNT });
  expect((await routedOrders(reseller)).map((order) => order.external_order_id).sort()).toEqual([...ids].sort());
  // The first page (250) was cut at the bound and read again with 125; the list went on with 125.
  expect(listCalls(sandbox, reseller).map((call) => new URLSearchParams(call.path.split('?')[1]).get('limit'))).toEqual(['250', '125', '125', '125']);
}, 90_000);

it('a divergence-watch pass over a supplier list whose full page is over 8 MiB succeeds', async ({ sandbox, target }) => {
  const tenant = await openTenant(sandbox, target, 'custom', ['platform_a']);
  const supplier = tenant.suppliers[0]!;
  // The supplier's own sales (no job of the service's): listed and left alone.
  for (let n = 1; n <= COUNT; n++) sandbox.seedOrder(supplier.shopDomain, 'platform_a', bigOrder('platform_a', 8_000_000 + n, new Date()));

  const pass = await check(tenant);

  expect(pass).toMatchObject({ status: 'succeeded', error: null, orders_seen: COUNT });
}, 90_000);
