/**
 * Review 3: a supplier's tracking link that a browser reads as `javascript:` must not reach the
 * storefront (the customer's shipping notification) whatever way it is written. The WHATWG URL
 * parser, which every browser uses for an `href`, strips leading C0 controls and spaces and removes
 * every tab, line feed and carriage return before it reads the scheme, so `java\tscript:` and
 * `\u0001javascript:` are `javascript:` links to a browser, not links without a scheme.
 */
import { describe, expect } from 'vitest';
import { buildFulfillmentPayload, sendWebhook } from './sandbox/server.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';

/** Each one is a `javascript:` link once a browser's URL parser reads it. */
const DISGUISED = ['java\tscript:alert(1)', 'java\nscript:alert(2)', 'javas\rcript:alert(3)', '\u0001javascript:alert(4)', '\u001fjavascript:alert(5)'];

describe('tracking links a browser reads as javascript:', () => {
  it('never reach the storefront, through the fulfillment webhook', async ({ service, api, sandbox }) => {
    for (const link of DISGUISED) expect(new URL(link).protocol).toBe('javascript:');

    const user = await registerUser(api);
    const resellerSecret = `whsec_reseller_${uniqueSuffix()}`;
    const reseller = await createResellerStore(api, user.token, { platform: 'platform_a', webhookSecret: resellerSecret });
    const supplierSecret = `whsec_supplier_${uniqueSuffix()}`;
    const supplier = await createSourceStore(api, user.token, reseller.id, { platform: 'custom', vendorTag: 'Acme Tools', webhookSecret: supplierSecret });
    const order = sandbox.buildOrderPayload('platform_a', { id: 930_001, lines: [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme Tools', quantity: 1, price: '25.00' }] });
    sandbox.seedOrder(reseller.shopDomain, 'platform_a', order);
    const routed = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: reseller.shopDomain, secret: resellerSecret, topic: 'orders/create', payload: order });
    expect(routed.status, JSON.stringify(routed.body)).toBe(200);
    const [jobId] = (routed.body as { syncJobIds: string[] }).syncJobIds;
    const job = await waitFor(async () => {
      const response = await api.get(`/v1/sync_jobs/${jobId}`, { token: user.token });
      return response.body.status === 'completed' ? response.body : null;
    }, 15_000, 'the order to be placed');

    const fulfillment = buildFulfillmentPayload('custom', {
      orderId: job.sourceOrderId,
      trackingNumbers: ['1Z001'],
      trackingUrls: [...DISGUISED, 'https://track.example/1Z001'],
    });
    const delivered = await sendWebhook({ targetUrl: `${service.url}${FULFILLMENTS_PATH}`, shopDomain: supplier.shopDomain, secret: supplierSecret, topic: 'fulfillments/create', payload: fulfillment });
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);

    const detail = await waitFor(async () => {
      const response = await api.get(`/v1/sync_jobs/${jobId}`, { token: user.token });
      return response.body.fulfillments.length === 1 && response.body.fulfillments[0].status === 'completed' ? response.body : null;
    }, 15_000, 'the tracking to be pushed');
    expect(detail.fulfillments[0].trackingUrls).toEqual(['https://track.example/1Z001']);
    const [sent] = sandbox.fulfillmentsFor(reseller.shopDomain);
    expect(sent!.body).toEqual({
      fulfillment: {
        tracking_number: '1Z001',
        tracking_numbers: ['1Z001'],
        tracking_url: 'https://track.example/1Z001',
        tracking_urls: ['https://track.example/1Z001'],
        notify_customer: true,
      },
    });
  });
});
