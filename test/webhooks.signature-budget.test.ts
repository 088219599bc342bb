/**
 * Review 10, flow control at the API: the failed-signature budget of the shared fulfillment webhook
 * (WEBHOOK_SIGNATURE_FAILURES_PER_MINUTE, per client on a domain) holds for every shop domain a
 * source store may have (up to 255 characters) and every client address, IPv6 included.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildFulfillmentPayload } from './sandbox/server.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { startTestService, type TestService } from './support/service.ts';
import { FULFILLMENTS_PATH, postRawWebhook } from './support/webhooks.ts';

const FAILURES_PER_MINUTE = 3;

let service: TestService;
beforeAll(async () => {
  service = await startTestService({ WEBHOOK_SIGNATURE_FAILURES_PER_MINUTE: String(FAILURES_PER_MINUTE), TRUST_PROXY: 'true' });
}, 60_000);
afterAll(() => service?.stop());

it('a forged delivery for a source store with a 255-character domain, from an IPv6 client, is refused (401, then 429), never a 500', async () => {
  const user = await registerUser(service.api);
  const reseller = await createResellerStore(service.api, user.token);
  const label = () => `l${randomBytes(31).toString('hex')}`.slice(0, 63);
  const shopDomain = [label(), label(), label(), label()].join('.');
  expect(shopDomain).toHaveLength(255);
  await createSourceStore(service.api, user.token, reseller.id, { platform: 'custom', shopDomain });

  const statuses: number[] = [];
  for (let i = 0; i <= FAILURES_PER_MINUTE; i++) {
    const body = JSON.stringify(buildFulfillmentPayload('custom', { orderId: `ord_${i}`, trackingNumbers: ['1Z999'] }));
    const answer = await postRawWebhook(service.url, FULFILLMENTS_PATH, {
      body,
      secret: `whsec_forged_${i}`,
      shopDomain,
      topic: 'fulfillments/create',
      forwardedFor: '2001:db8:85a3:1234:5678:9abc:def0:1234',
    });
    statuses.push(answer.status);
  }
  expect(statuses).toEqual([401, 401, 401, 429]);
});
