/**
 * The sweep takes its turn (one process at a time) only for the stranded rows it moves: its hooks,
 * the fulfillments' claims and forgetting of held shipments among them, run after that transaction,
 * so two worker processes' sweeps overlap there. A held shipment of an order whose read is refused
 * for good (404), possibly the order of a job ended not_placed, is reported on that job: both
 * processes read it before either forgot it, and each wrote the audit entry
 * `cancellation.shipment_unattributed` (the to-do entry stayed one: entries are one per job). It is
 * written once per cancellation and shipment.
 */
import { describe, expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { ANVIL, createShop, placeWithAnswerLost, sendStorefrontWebhook, settled } from './support/cancellations.ts';
import { test } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

test.override('serviceEnv', { SYNC_RETRY_BASE_DELAY_MS: '50', SWEEP_INTERVAL_MS: '300', RECONCILE_INTERVAL_MS: '0', DIVERGENCE_INTERVAL_MS: '0' });
const it = test;

let nextOrderId = 5_990_000 + Math.floor(Math.random() * 10_000) * 10;

describe('two worker processes sweeping at once', () => {
  it('report a held shipment whose order read is refused for good once on the job ended not_placed: one audit entry, one to-do entry', async ({ api, sandbox, service, startWorkerForTest }) => {
    const shop = await createShop(api, 'custom', 'custom');
    const order = sandbox.buildOrderPayload('custom', { id: `ho-${nextOrderId++}`, lines: [{ ...ANVIL, quantity: 1 }] });
    const { jobId, held: placed } = await placeWithAnswerLost(api, sandbox, service.url, shop, order);
    // The lookup misses the order (listed as created before the job): not_placed.
    const stored = sandbox.orderOf(shop.acme.shopDomain, 'custom', String(placed.id))!;
    sandbox.seedOrder(shop.acme.shopDomain, 'custom', { ...stored, createdAt: new Date(Date.now() - 24 * 60 * 60_000).toISOString() });
    await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
    expect(await waitForJob(api, shop.user.token, jobId, settled)).toMatchObject({ cancellations: [{ outcome: 'not_placed', scope: 'order' }] });

    // A second worker process sweeping as often; the supplier answers slowly, so both sweeps' reads overlap.
    await startWorkerForTest({ SWEEP_INTERVAL_MS: '300' });
    sandbox.setFaults(shop.acme.shopDomain, { latencyMs: 1_500 });
    const gone = `ord_gone_${nextOrderId++}`;
    await queryRows(
      service.databaseUrl,
      `insert into held_fulfillments (id, owner_id, reseller_store_id, source_store_id, source_order_id, dedupe_key, webhook_id, tracking, received_at)
       select $1, owner_id, id, $3, $4, 'gone-key', null, $5::jsonb, now() from reseller_stores where id = $2`,
      [`hf_overlap_${nextOrderId++}`, shop.reseller.id, shop.acme.id, gone, JSON.stringify({ numbers: ['TWICE-404'], urls: [], company: null })],
    );
    // Both processes read it (each gets the 404, recorded by the sandbox as it answers) before either forgets it.
    const reads = () => sandbox.requestsFor(shop.acme.shopDomain).filter((request) => request.method === 'GET' && request.path.includes(gone)).length;
    await waitFor(async () => reads() >= 2, 15_000, 'both sweeps reading the order');
    await waitFor(async () => (await queryRows(service.databaseUrl, 'select 1 from held_fulfillments where reseller_store_id = $1', [shop.reseller.id])).length === 0, 15_000, 'held shipment forgotten');
    // The later read's report, if it writes one, commits right after its answer.
    await new Promise((resolve) => setTimeout(resolve, 1_000));

    const audits = await queryRows<{ metadata: any }>(service.databaseUrl, "select metadata from audit_entries where reseller_store_id = $1 and action = 'cancellation.shipment_unattributed'", [shop.reseller.id]);
    expect(audits).toEqual([{ metadata: expect.objectContaining({ syncJobId: jobId, sourceOrderId: gone, trackingNumbers: ['TWICE-404'] }) }]);
    const todo = (await api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data;
    expect(todo).toEqual([expect.objectContaining({ type: 'too_late', syncJobId: jobId, detail: expect.stringContaining(`order ${gone} (tracking TWICE-404)`) })]);
    sandbox.clearFaults(shop.acme.shopDomain);
  }, 60_000);

  it('report each of two shipments of an order whose read is refused for good, the second with fewer tracking numbers: two audit entries', async ({ api, sandbox, service }) => {
    const shop = await createShop(api, 'custom', 'custom');
    const order = sandbox.buildOrderPayload('custom', { id: `ho-${nextOrderId++}`, lines: [{ ...ANVIL, quantity: 1 }] });
    const { jobId, held: placed } = await placeWithAnswerLost(api, sandbox, service.url, shop, order);
    const stored = sandbox.orderOf(shop.acme.shopDomain, 'custom', String(placed.id))!;
    sandbox.seedOrder(shop.acme.shopDomain, 'custom', { ...stored, createdAt: new Date(Date.now() - 24 * 60 * 60_000).toISOString() });
    await sendStorefrontWebhook(service.url, shop, 'orders/cancelled', { id: order.id, cancelledAt: new Date().toISOString() });
    expect(await waitForJob(api, shop.user.token, jobId, settled)).toMatchObject({ cancellations: [{ outcome: 'not_placed', scope: 'order' }] });

    // The supplier ships an order it cannot show (404) twice: two parcels, then one more without tracking.
    const gone = `ord_gone_${nextOrderId++}`;
    const hold = async (dedupeKey: string, numbers: string[]) => {
      await queryRows(
        service.databaseUrl,
        `insert into held_fulfillments (id, owner_id, reseller_store_id, source_store_id, source_order_id, dedupe_key, webhook_id, tracking, received_at)
         select $1, owner_id, id, $3, $4, $6, null, $5::jsonb, now() from reseller_stores where id = $2`,
        [`hf_twice_${nextOrderId++}`, shop.reseller.id, shop.acme.id, gone, JSON.stringify({ numbers, urls: [], company: null }), dedupeKey],
      );
      await waitFor(async () => (await queryRows(service.databaseUrl, 'select 1 from held_fulfillments where reseller_store_id = $1', [shop.reseller.id])).length === 0, 15_000, 'held shipment forgotten');
    };
    await hold('first-key', ['PARCEL-1', 'PARCEL-2']);
    await hold('second-key', []);

    const audits = await queryRows<{ metadata: any }>(service.databaseUrl, "select metadata from audit_entries where reseller_store_id = $1 and action = 'cancellation.shipment_unattributed' order by created_at", [shop.reseller.id]);
    expect(audits.map(({ metadata }) => metadata.trackingNumbers)).toEqual([['PARCEL-1', 'PARCEL-2'], []]);
  }, 60_000);
});
