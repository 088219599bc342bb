/**
 * Held shipments whose supplier order cannot be read for now (the supplier answers 5xx) are kept and
 * read again at each sweep, for up to 7 days. The sweep's forgetting step reads at most 200 a pass:
 * were they read oldest first, 200 or more kept for a supplier that never answers would take every
 * pass, and a newer held shipment (of any store) would never be looked at for those 7 days, its
 * tracking never reaching the customer. Rows read and kept go behind the ones not read since.
 */
import { describe, expect } from 'vitest';
import { sendWebhook } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { ANVIL, createShop, placeWithAnswerLost, sendStorefrontWebhook, settled, type Shop } from './support/cancellations.ts';
import { test } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';
import type { ApiClient } from './support/api.ts';
import type { Sandbox } from './sandbox/server.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '300', RECONCILE_INTERVAL_MS: '0', DIVERGENCE_INTERVAL_MS: '0', PLATFORM_PACING: 'custom=2000:2000' });
const it = test;

let nextOrderId = 5_880_000 + Math.floor(Math.random() * 10_000) * 10;

/** More than a sweep's forgetting step reads in one pass (FORGETS_PER_PASS). */
const KEPT = 201;

/**
 * Acme's job dies with every answer lost (in doubt); the supplier ships (`ship`: whose order); the
 * shipment is held for the job; the customer cancels and the lookup misses the order: `not_placed`.
 */
async function heldThenEndedUnplaced(api: ApiClient, sandbox: Sandbox, serviceUrl: string, ship: (shop: Shop, sourceOrderId: string) => Record<string, unknown>) {
  const shop = await createShop(api, 'custom', 'custom');
  const order = sandbox.buildOrderPayload('custom', { id: `hs-${nextOrderId++}`, lines: [{ ...ANVIL, quantity: 1 }] });
  const { jobId, held: placed } = await placeWithAnswerLost(api, sandbox, serviceUrl, shop, order);
  const sourceOrderId = String(placed.id);
  const delivered = await sendWebhook({ targetUrl: `${serviceUrl}${FULFILLMENTS_PATH}`, shopDomain: shop.acme.shopDomain, secret: shop.acme.secret, topic: 'fulfillments/create', payload: ship(shop, sourceOrderId) as never });
  expect(delivered.body).toMatchObject({ received: true, syncJobIds: [] });
  const stored = sandbox.orderOf(shop.acme.shopDomain, 'custom', sourceOrderId)!;
  sandbox.seedOrder(shop.acme.shopDomain, 'custom', { ...stored, createdAt: new Date(Date.now() - 24 * 60 * 60_000).toISOString() });
  await sendStorefrontWebhook(serviceUrl, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
  expect(await waitForJob(api, shop.user.token, jobId, settled)).toMatchObject({ cancellations: [{ outcome: 'not_placed', scope: 'order' }] });
  return { shop, jobId, sourceOrderId };
}

const heldOf = (databaseUrl: string, shop: Shop) => queryRows<{ id: string }>(databaseUrl, 'select id from held_fulfillments where reseller_store_id = $1', [shop.reseller.id]);

describe('held shipments a supplier that does not answer keeps unreadable', () => {
  it(`do not hold back a newer held shipment of another store, ${KEPT} of them kept from pass to pass`, async ({ api, sandbox, service }) => {
    // Down: a store whose job ended not_placed and whose supplier now answers 500 to every read.
    const down = await heldThenEndedUnplaced(api, sandbox, service.url, (shop) => sandbox.directSaleFulfillment(shop.acme.shopDomain, 'custom', { trackingNumbers: ['OWN'] }));
    await waitFor(async () => (await heldOf(service.databaseUrl, down.shop)).length === 0, 10_000, 'own sale forgotten');
    sandbox.setFaults(down.shop.acme.shopDomain, { alwaysFail: true, status: 500 });
    await queryRows(service.databaseUrl, "update sync_jobs set created_at = now() - interval '3 days' where id = $1", [down.jobId]);
    // Shipments of its supplier held a day or two ago (within the 7 days they are read for): older than any other.
    await queryRows(
      service.databaseUrl,
      `insert into held_fulfillments (id, owner_id, reseller_store_id, source_store_id, source_order_id, dedupe_key, webhook_id, tracking, received_at)
       select 'hf_starve_' || n || '_' || $3, s.owner_id, s.id, $2, 'ord_down_' || n, 'down-key', null,
              jsonb_build_object('numbers', jsonb_build_array('DOWN-' || n), 'urls', '[]'::jsonb, 'company', null),
              now() - interval '2 days' + n * interval '1 second'
       from reseller_stores s, generate_series(1, ${KEPT}) as n where s.id = $1`,
      [down.shop.reseller.id, down.shop.acme.id, nextOrderId++],
    );
    const readsOfDown = () => sandbox.requestsFor(down.shop.acme.shopDomain).filter((request) => request.method === 'GET' && request.path.includes('ord_down_')).length;
    await waitFor(async () => readsOfDown() >= 200, 10_000, 'a pass reading the kept shipments');

    // Another store's shipment, held now for its job in doubt, whose order the job ended not_placed turns out to be.
    const other = await heldThenEndedUnplaced(api, sandbox, service.url, (shop, id) => sandbox.shipOrder(shop.acme.shopDomain, 'custom', id, { trackingNumbers: ['NEWER-1'] })[0]!);
    const job = await waitForJob(api, other.shop.user.token, other.jobId, (j) => j.fulfillments?.[0]?.status === 'completed', 20_000, 'the newer held tracking pushed for');
    expect(job).toMatchObject({ sourceOrderId: other.sourceOrderId, fulfillments: [{ trackingNumbers: ['NEWER-1'] }], cancellations: [{ outcome: 'too_late' }] });
    expect(sandbox.fulfillmentsFor(other.shop.reseller.shopDomain)).toHaveLength(1);
    // The unreadable ones are still kept, to be read again (within their 7 days).
    expect(await heldOf(service.databaseUrl, down.shop)).toHaveLength(KEPT);
    sandbox.clearFaults(down.shop.acme.shopDomain);
  }, 60_000);
});
