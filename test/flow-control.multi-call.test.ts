/**
 * An attempt that makes several calls to one store waits for a turn per call, so pacing spends no
 * attempt (platform_b takes one tracking number per call).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFulfillmentPayload, sendWebhook, startSandbox, type Sandbox } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { addSupplier, allCompleted, flowControlKit, openTenant } from './support/flow-control.ts';
import { startTestService, type TestService } from './support/service.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';
import { waitFor } from './support/wait.ts';

let sandbox: Sandbox;
beforeAll(async () => {
  sandbox = await startSandbox();
});
afterAll(() => sandbox?.close());
const { postOrders } = flowControlKit(() => sandbox);

describe('an attempt that makes several calls to one store', () => {
  let service: TestService;

  beforeAll(async () => {
    // platform_b takes one tracking number per call: a reseller store paced at 2 calls/s.
    service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, PLATFORM_PACING: 'platform_b=2:2' });
  });
  afterAll(() => service?.stop());

  it('waits for a turn per call, so a backlog of multi-parcel fulfillments spends no attempt on pacing', async () => {
    const tenant = await openTenant(service, 'platform_b');
    const { reseller } = tenant;
    const supplierSecret = `whsec_${randomBytes(12).toString('hex')}`;
    const supplier = await addSupplier(service, tenant, { platform: 'custom', vendorTag: 'ParcelCo', webhookSecret: supplierSecret });

    const jobIds = await postOrders(service, tenant, supplier.vendorTag, 12);
    await allCompleted(service.databaseUrl, jobIds, 20_000);

    // Each supplier order ships in two parcels: 24 calls to the reseller store, 12 s of its turns (and
    // more than the 5 s a call waits for its turn inline, were only the first call's turn reserved).
    const supplierOrders = sandbox.ordersFor(supplier.shopDomain);
    for (const [i, order] of supplierOrders.entries()) {
      const payload = buildFulfillmentPayload('custom', { orderId: order.id, trackingNumbers: [1, 2].map((n) => `PARCEL-${i}-${n}`) });
      const answer = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: supplier.shopDomain, secret: supplierSecret, topic: 'fulfillments/create', payload });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    }
    const fulfillments = () =>
      queryRows<{ status: string; attempts: number }>(service.databaseUrl, 'select status, attempts from fulfillments where reseller_store_id = $1', [reseller.id]);
    await waitFor(async () => {
      const rows = await fulfillments();
      return rows.length === 12 && rows.every((row) => row.status === 'completed');
    }, 40_000, 'twelve completed fulfillments');
    expect((await fulfillments()).map((row) => row.attempts)).toEqual(Array(12).fill(1));
    expect(sandbox.fulfillmentsFor(reseller.shopDomain)).toHaveLength(24);
  }, 90_000);
});
