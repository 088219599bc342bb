/**
 * Bounded fulfillments (operations.md, fairness: one supplier must never hold back another's
 * tracking). A fulfillment carries at most MAX_TRACKING_NUMBERS_PER_FULFILLMENT tracking numbers,
 * and a large one books only TURNS_BOOKED_AHEAD of the reseller store's turns before it starts
 * (platform_b takes one number per call), taking the rest call by call: another supplier's normal
 * fulfillment for the same reseller store takes its turn among them instead of after them all.
 * The check is an ordering on the sandbox's record of the reseller store's calls, not a speed.
 */
import { expect } from 'vitest';
import { MAX_TRACKING_NUMBERS_PER_FULFILLMENT } from '../contract/limits.ts';
import { buildFulfillmentPayload, sendWebhook } from './sandbox/server.ts';
import { expectErrorEnvelope } from './support/assertions.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH, fulfillmentRows, uniqueSuffix } from './support/webhooks.ts';

// A small burst, so the large fulfillment's calls are spread over seconds at 5 per second.
test.override('serviceEnv', { PLATFORM_PACING: 'platform_b=5:2' });

let nextOrderId = 930_000 + Math.floor(Math.random() * 10_000) * 10;

const it = test.extend('twoSuppliers', async ({ service, api, sandbox }) => {
  const user = await registerUser(api);
  const resellerSecret = `whsec_reseller_${uniqueSuffix()}`;
  const reseller = await createResellerStore(api, user.token, { platform: 'platform_b', webhookSecret: resellerSecret });
  const suppliers = await Promise.all(
    ['Big Shipper', 'Small Shipper'].map(async (vendorTag) => {
      const secret = `whsec_supplier_${uniqueSuffix()}`;
      const store = await createSourceStore(api, user.token, reseller.id, { platform: 'custom', vendorTag, webhookSecret: secret });
      return { ...store, secret };
    }),
  );
  const orderId = nextOrderId++;
  const payload = sandbox.buildOrderPayload('platform_b', {
    id: orderId,
    lines: suppliers.map((supplier, i) => ({ sku: `S-${i}`, title: 'Thing', vendor: supplier.vendorTag, quantity: 1, price: '10.00' })),
  });
  sandbox.seedOrder(reseller.shopDomain, 'platform_b', payload);
  const routed = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: reseller.shopDomain, secret: resellerSecret, topic: 'orders/create', payload });
  expect(routed.status, JSON.stringify(routed.body)).toBe(200);
  const jobIds = (routed.body as { syncJobIds: string[] }).syncJobIds;
  const jobs = await waitFor(async () => {
    const found = await Promise.all(jobIds.map(async (id) => (await api.get(`/v1/sync_jobs/${id}`, { token: user.token })).body));
    return found.every((job) => job.status === 'completed') ? found : null;
  }, 15_000, 'both supplier orders to be placed');
  const jobOf = (supplier: { id: string }) => jobs.find((job) => job.sourceStoreId === supplier.id);
  const fulfil = (supplier: (typeof suppliers)[number], trackingNumbers: string[]) =>
    sendWebhook({
      targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
      shopDomain: supplier.shopDomain,
      secret: supplier.secret,
      topic: 'fulfillments/create',
      payload: buildFulfillmentPayload('custom', { orderId: jobOf(supplier).sourceOrderId, trackingNumbers }),
    });
  /** The tracking numbers the reseller store received, in the order it received them. */
  const received = () => sandbox.fulfillmentsFor(reseller.shopDomain).map((fulfillment) => (fulfillment.body as { tracking_number: string }).tracking_number);
  return { user, reseller, big: suppliers[0]!, small: suppliers[1]!, jobOf, fulfil, received };
});

it("a large fulfillment does not hold back another supplier's tracking for the same reseller store", async ({ api, twoSuppliers }) => {
  const { big, small, fulfil, received, jobOf, user } = twoSuppliers;
  const bigNumbers = Array.from({ length: 40 }, (_, i) => `BIG-${i}`);
  expect((await fulfil(big, bigNumbers)).status).toBe(200);
  await waitFor(async () => received().length > 0, 15_000, 'the large fulfillment to start');

  expect((await fulfil(small, ['SMALL-1'])).status).toBe(200);
  await waitFor(async () => received().includes('BIG-39'), 30_000, 'the large fulfillment to finish');

  const order = received();
  // Taken among the large fulfillment's calls, not after all 40 of them.
  expect(order.indexOf('SMALL-1')).toBeGreaterThan(-1);
  expect(order.indexOf('SMALL-1')).toBeLessThan(order.indexOf('BIG-39'));
  expect(order.filter((number) => number.startsWith('BIG-')).sort()).toEqual([...bigNumbers].sort());
  await waitFor(async () => {
    const latest = (await api.get(`/v1/sync_jobs/${jobOf(big).id}`, { token: user.token })).body;
    return latest.fulfillments.every((fulfillment: { status: string }) => fulfillment.status === 'completed') ? latest : null;
  }, 15_000, 'the large fulfillment to complete');
});

it(`a fulfillment with more than ${MAX_TRACKING_NUMBERS_PER_FULFILLMENT} tracking numbers is refused with 400 and records nothing`, async ({ service, twoSuppliers }) => {
  const { big, reseller, fulfil, received } = twoSuppliers;
  const numbers = Array.from({ length: MAX_TRACKING_NUMBERS_PER_FULFILLMENT + 1 }, (_, i) => `N-${i}`);
  const refused = await fulfil(big, numbers);
  expect(refused.status, JSON.stringify(refused.body)).toBe(400);
  expectErrorEnvelope(refused.body);
  expect(refused.body).toMatchObject({ error: { code: 'validation_failed', param: 'tracking_numbers' } });
  expect(await fulfillmentRows(service.databaseUrl, reseller.id)).toEqual([]);
  expect(received()).toEqual([]);

  expect((await fulfil(big, numbers.slice(0, MAX_TRACKING_NUMBERS_PER_FULFILLMENT))).status).toBe(200);
  expect(await fulfillmentRows(service.databaseUrl, reseller.id)).toHaveLength(1);
});
