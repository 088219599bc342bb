/**
 * A source store's webhook secret rotated through one API process takes effect at once in another
 * API process on the same database, although that one had the domain's old secret cached (the
 * fulfillment webhook keeps decrypted secrets per domain: src/webhooks/source-secrets.ts).
 */
import { expect } from 'vitest';
import { buildFulfillmentPayload } from './sandbox/server.ts';
import { expectError } from './support/assertions.ts';
import { createResellerStore, createSourceStore } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';
import { FULFILLMENTS_PATH, postRawWebhook, uniqueSuffix } from './support/webhooks.ts';

it.override('serviceEnv', { ROLE: 'api' });

const newSecret = () => `whsec_${uniqueSuffix()}${uniqueSuffix()}`;

/** A fulfillment of an order no job placed: verified, it is acknowledged with no job (200). */
function deliver(baseUrl: string, shopDomain: string, secret: string) {
  const body = JSON.stringify(buildFulfillmentPayload('custom', { orderId: `ord_${uniqueSuffix()}`, trackingNumbers: ['1Z999'] }));
  return postRawWebhook(baseUrl, FULFILLMENTS_PATH, { body, secret, shopDomain, topic: 'fulfillments/create' });
}

it('a webhookSecret rotated through one API process stops the old secret and verifies the new one at once in another', async ({ service, api, user, startWorker }) => {
  const other = await startWorker({ ROLE: 'api' });
  const otherUrl = other.url!;
  const reseller = await createResellerStore(api, user.token);
  const shopDomain = `supplier-${uniqueSuffix()}.example.com`;
  const oldSecret = newSecret();
  const store = await createSourceStore(api, user.token, reseller.id, { platform: 'custom', shopDomain, webhookSecret: oldSecret });

  // The other process verifies deliveries with the old secret, and so has it cached.
  expect((await deliver(otherUrl, shopDomain, oldSecret)).status).toBe(200);
  expect((await deliver(otherUrl, shopDomain, oldSecret)).status).toBe(200);

  const rotatedSecret = newSecret();
  const rotated = await api.patch(`/v1/reseller_stores/${reseller.id}/source_stores/${store.id}`, { token: user.token, body: { webhookSecret: rotatedSecret } });
  expect(rotated.status).toBe(200);

  expectError(await deliver(otherUrl, shopDomain, oldSecret), 401, 'invalid_signature');
  expect((await deliver(otherUrl, shopDomain, rotatedSecret)).status).toBe(200);
  // And in the process that made the change.
  expectError(await deliver(service.url, shopDomain, oldSecret), 401, 'invalid_signature');
  expect((await deliver(service.url, shopDomain, rotatedSecret)).status).toBe(200);
});
