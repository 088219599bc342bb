/**
 * The sweep's claims of held shipments (a supplier's shipment that came before its job recorded the
 * order, kept until it does). One that cannot be claimed, for an error of its own, must not stop the
 * pass: before, the first such row failed every sweep from then on, and every held shipment after it
 * (of any store) waited, its tracking never reaching the customer, and nothing was forgotten either.
 */
import { describe, expect } from 'vitest';
import { queryRows } from './support/database.ts';
import { ANVIL, NUT, createShop, sendStorefrontWebhook } from './support/cancellations.ts';
import { test } from './support/fixtures.ts';
import { waitForJob } from './support/sync-jobs.ts';

test.override('serviceEnv', { SWEEP_INTERVAL_MS: '300', RECONCILE_INTERVAL_MS: '0', DIVERGENCE_INTERVAL_MS: '0' });
const it = test;

let nextOrderId = 6_120_000 + Math.floor(Math.random() * 10_000) * 10;

const holdSql = `insert into held_fulfillments (id, owner_id, reseller_store_id, source_store_id, source_order_id, dedupe_key, webhook_id, tracking, received_at)
  select $1, s.owner_id, s.id, $3, $4, $1, null, $5::jsonb, now() - $6 * interval '1 second' from reseller_stores s where s.id = $2`;

describe('the sweep claiming held shipments', () => {
  it('claims the others when one of them cannot be claimed, and keeps that one for the next sweep', async ({ api, sandbox, service }) => {
    const shop = await createShop(api, 'custom', 'custom');
    const order = sandbox.buildOrderPayload('custom', { id: `hc-${nextOrderId++}`, lines: [ANVIL, NUT] });
    sandbox.seedOrder(shop.reseller.shopDomain, 'custom', order);
    const routed = await sendStorefrontWebhook(service.url, shop, 'orders/create', order);
    const jobs = await Promise.all((routed.body as { syncJobIds: string[] }).syncJobIds.map((id) => waitForJob(api, shop.user.token, id, (job) => job.status === 'completed')));
    const acmeJob = jobs.find((job) => job.sourceStoreId === shop.acme.id);
    const boltJob = jobs.find((job) => job.sourceStoreId === shop.bolt.id);
    // Held before their jobs recorded the orders: the older one's tracking is unreadable (it fails its claim), the newer one's is sound.
    const broken = `hf_broken_${nextOrderId++}`;
    await queryRows(service.databaseUrl, holdSql, [broken, shop.reseller.id, shop.acme.id, acmeJob.sourceOrderId, JSON.stringify({}), 120]);
    await queryRows(service.databaseUrl, holdSql, [`hf_sound_${nextOrderId++}`, shop.reseller.id, shop.bolt.id, boltJob.sourceOrderId, JSON.stringify({ numbers: ['HC-1'], urls: [], company: null }), 60]);

    const pushed = await waitForJob(api, shop.user.token, boltJob.id, (job) => job.fulfillments?.[0]?.status === 'completed', 10_000);
    expect(pushed.fulfillments).toMatchObject([{ trackingNumbers: ['HC-1'] }]);
    expect(sandbox.fulfillmentsFor(shop.reseller.shopDomain)).toHaveLength(1);
    // The broken one is kept for the next sweeps, behind those not tried since, and claimed nothing.
    const [kept] = await queryRows<{ id: string; tried: boolean }>(service.databaseUrl, 'select id, read_failed_at is not null as tried from held_fulfillments where id = $1', [broken]);
    expect(kept).toEqual({ id: broken, tried: true });
    expect((await waitForJob(api, shop.user.token, acmeJob.id, () => true)).fulfillments).toEqual([]);
  }, 60_000);
});
