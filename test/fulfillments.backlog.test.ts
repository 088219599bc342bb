/**
 * A fulfillment with more tracking numbers than the turns it books ahead (platform_b takes one per
 * call; src/fulfillments/attempt.ts books 4) reserves the rest call by call. Behind a backlog of the
 * storefront's calls those turns are seconds away: each call waits for its turn (up to a minute)
 * instead of failing unsent, which spent the attempt's retries until the rest of the tracking died.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { expect } from 'vitest';
import { buildFulfillmentPayload, sendWebhook } from './sandbox/server.ts';
import { createShop, sendStorefrontWebhook } from './support/cancellations.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH } from './support/webhooks.ts';

test.override('serviceEnv', { PLATFORM_PACING: 'platform_b=2:1', SYNC_RETRY_BASE_DELAY_MS: '300' });

test('a six-parcel fulfillment reaches the customer while the storefront has a backlog of tracking to add, no attempt failing unsent', async ({ service, api, sandbox }) => {
  const shop = await createShop(api, 'platform_b', 'custom');
  const { user, reseller, acme: supplier } = shop;
  const payload = sandbox.buildOrderPayload('platform_b', { id: 950_000 + Math.floor(Math.random() * 10_000), lines: [{ sku: 'S-1', title: 'Thing', vendor: 'Acme', quantity: 6, price: '10.00' }] });
  sandbox.seedOrder(reseller.shopDomain, 'platform_b', payload);
  const routed = await sendStorefrontWebhook(service.url, shop, 'orders/create', payload);
  const [jobId] = (routed.body as { syncJobIds: string[] }).syncJobIds;
  const jobOf = async () => (await api.get(`/v1/sync_jobs/${jobId}`, { token: user.token })).body;
  const job = await waitFor(async () => ((await jobOf()).status === 'completed' ? jobOf() : null), 15_000, 'the supplier order');
  const fulfil = (trackingNumbers: string[]) =>
    sendWebhook({
      targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
      shopDomain: supplier.shopDomain,
      secret: supplier.secret,
      topic: 'fulfillments/create',
      payload: buildFulfillmentPayload('custom', { orderId: job.sourceOrderId, trackingNumbers }),
    });
  // Other parcels keep arriving, faster than the storefront's 2 calls a second.
  let sending = true;
  let sent = 0;
  const background = (async () => {
    while (sending) {
      await fulfil([`BG-${++sent}`]);
      await delay(200);
    }
  })();
  try {
    await delay(1_000);
    expect((await fulfil(['P-1', 'P-2', 'P-3', 'P-4', 'P-5', 'P-6'])).status).toBe(200);
    await delay(3_000);
  } finally {
    sending = false;
    await background;
  }
  const big = await waitFor(
    async () => {
      const found = (await jobOf()).fulfillments.find((fulfillment: any) => fulfillment.trackingNumbers.length === 6);
      return found && ['completed', 'dead'].includes(found.status) ? found : null;
    },
    90_000,
    'the six-parcel fulfillment',
  );
  expect(big.timeline.filter((entry: any) => entry.outcome === 'failed').map((entry: any) => entry.errorMessage)).toEqual([]);
  expect(big.status).toBe('completed');
}, 120_000);
