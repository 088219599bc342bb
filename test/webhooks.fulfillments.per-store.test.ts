/**
 * The per-source-store fulfillment webhook URL (`POST /v1/fulfillments/webhook/{source_store_id}`):
 * verified with that one store's secret, so nothing another tenant does on the same supplier domain
 * or from the same platform address can refuse it (issue 27, item 4). The attack: a tenant adds 8
 * source stores on the victim's supplier domain, proves each with deliveries it signs itself, then
 * misconfigures its secret so the platform's address sends failed signatures past the limit.
 */
import { expect } from 'vitest';
import { buildFulfillmentPayload } from './sandbox/server.ts';
import { expectError } from './support/assertions.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { FULFILLMENTS_PATH, postRawWebhook, uniqueSuffix } from './support/webhooks.ts';

const FAILURES_PER_MINUTE = 3;
test.override('serviceEnv', { WEBHOOK_SIGNATURE_FAILURES_PER_MINUTE: String(FAILURES_PER_MINUTE) });

const body = (orderId: string) => JSON.stringify(buildFulfillmentPayload('custom', { orderId, trackingNumbers: [`T-${uniqueSuffix()}`] }));
const storePath = (id: string) => `${FULFILLMENTS_PATH}/${id}`;

test("a tenant spending a shared address's failed-signature budget on the victim's domain cannot refuse the victim's store URL", async ({ service, api }) => {
  const domain = `supplier-${uniqueSuffix()}.example.com`;
  const victim = await registerUser(api);
  const victimSecret = `whsec_victim_${uniqueSuffix()}`;
  const victimReseller = await createResellerStore(api, victim.token);
  const victimStore = await createSourceStore(api, victim.token, victimReseller.id, { platform: 'custom', shopDomain: domain, webhookSecret: victimSecret });

  const attacker = await registerUser(api);
  const attackerReseller = await createResellerStore(api, attacker.token);
  for (let i = 0; i < 8; i++) {
    const secret = `whsec_attacker_${i}_${uniqueSuffix()}`;
    await createSourceStore(api, attacker.token, attackerReseller.id, { platform: 'custom', shopDomain: domain, webhookSecret: secret, vendorTag: `X ${i}` });
    // Proven: a delivery it signs itself verifies, so the record becomes one of the domain's senders.
    const proof = await postRawWebhook(service.url, FULFILLMENTS_PATH, { body: body(`x-${i}`), secret, shopDomain: domain, topic: 'fulfillments/create' });
    expect(proof.status, JSON.stringify(proof.body)).toBe(200);
  }
  // Misconfigured: the platform's address now delivers bad signatures for the domain, past the limit.
  const statuses: number[] = [];
  for (let i = 0; i <= FAILURES_PER_MINUTE + 1; i++) {
    statuses.push((await postRawWebhook(service.url, FULFILLMENTS_PATH, { body: body('x-bad'), secret: 'whsec_wrong', shopDomain: domain, topic: 'fulfillments/create' })).status);
  }
  expect(statuses).toContain(429);

  // The victim's correctly signed fulfillment from the same address, to its store's own URL: one HMAC, accepted.
  const accepted = await postRawWebhook(service.url, storePath(victimStore.id), { body: body('v-1'), secret: victimSecret, shopDomain: domain, topic: 'fulfillments/create' });
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
  expect(accepted.body).toMatchObject({ received: true });
});

test("the store URL is verified with that store's secret alone: another store's secret, a deleted store or an unknown id is 401, never 429", async ({ service, api }) => {
  const domain = `supplier-${uniqueSuffix()}.example.com`;
  const owner = await registerUser(api);
  const reseller = await createResellerStore(api, owner.token);
  const secrets = [`whsec_a_${uniqueSuffix()}`, `whsec_b_${uniqueSuffix()}`];
  const [first, second] = await Promise.all(
    secrets.map((webhookSecret, i) => createSourceStore(api, owner.token, reseller.id, { platform: 'custom', shopDomain: domain, webhookSecret, vendorTag: `V ${i}` })),
  );
  const post = (id: string, secret: string) => postRawWebhook(service.url, storePath(id), { body: body('o-1'), secret, shopDomain: domain, topic: 'fulfillments/create' });

  expect((await post(first!.id, secrets[0]!)).status).toBe(200);
  // Signed by a store of the same domain, but not the one the URL names; many times, and never limited.
  for (let i = 0; i <= FAILURES_PER_MINUTE + 1; i++) expectError(await post(first!.id, secrets[1]!), 401, 'invalid_signature');
  expect((await post(first!.id, secrets[0]!)).status).toBe(200);
  expectError(await post('sst_unknown', secrets[0]!), 401, 'invalid_signature');
  expectError(await post('sst%00x', secrets[0]!), 401, 'invalid_signature');

  expect((await api.delete(`/v1/reseller_stores/${reseller.id}/source_stores/${second!.id}`, { token: owner.token })).status).toBe(204);
  expectError(await post(second!.id, secrets[1]!), 401, 'invalid_signature');
});
