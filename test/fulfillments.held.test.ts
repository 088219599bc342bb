/**
 * Held fulfillments (an order's tracking that came before its job learnt the order) and the sweep's
 * two steps over them, claims then forgetting, apart: a job that records the order between the two
 * must not lose the tracking.
 */
import { describe, expect } from 'vitest';
import { connectOrm } from '../src/database.ts';
import { FulfillmentRepository } from '../src/fulfillments/repository.ts';
import { noJobCanOwn } from '../src/sync-jobs/repository.ts';
import { sendWebhook } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { settled } from './support/sync-jobs.ts';
import { ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';

// The sweep stays out of the way: the test runs its steps itself.
test.override('serviceEnv', { SWEEP_INTERVAL_MS: '3600000' });
const it = test;

describe('the sweep forgetting held fulfillments', () => {
  it('keeps one whose order a job recorded after the claims were read, for the next claims', async ({ api, sandbox, service }) => {
    const user = await registerUser(api);
    const resellerSecret = `whsec_r_${uniqueSuffix()}`;
    const reseller = await createResellerStore(api, user.token, { platform: 'custom', webhookSecret: resellerSecret });
    const supplier = await createSourceStore(api, user.token, reseller.id, { platform: 'custom', vendorTag: 'Acme' });
    const payload = sandbox.buildOrderPayload('custom', { id: `ord_held_${uniqueSuffix()}`, lines: [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 1, price: '25.00' }] });
    const routed = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: reseller.shopDomain, secret: resellerSecret, topic: 'orders/create', payload });
    const jobId = (routed.body as { syncJobIds: string[] }).syncJobIds[0]!;
    const job = await settled(api, user.token, jobId);
    expect(job.status).toBe('completed');
    // Held while the job was in doubt; the job has since recorded the order, after the claims were read.
    await queryRows(
      service.databaseUrl,
      `insert into held_fulfillments (id, owner_id, reseller_store_id, source_store_id, source_order_id, dedupe_key, webhook_id, tracking, received_at)
       select $1, owner_id, id, $3, $4, 'late-key', null, $5::jsonb, now() from reseller_stores where id = $2`,
      [`hf_${uniqueSuffix()}`, reseller.id, supplier.id, job.sourceOrderId, JSON.stringify({ numbers: ['LATE-1'], urls: [], company: null })],
    );
    const orm = await connectOrm(service.databaseUrl, 1);
    try {
      const fulfillments = new FulfillmentRepository(orm, noJobCanOwn);
      expect(await fulfillments.forgetUnowned()).toBe(0);
      expect((await fulfillments.findClaimable(100)).filter((held) => held.syncJobId === jobId)).toHaveLength(1);
    } finally {
      await orm.close();
    }
  });
});
