/**
 * Review 10, flow control at the API: the failed-signature budget of the shared fulfillment webhook
 * (WEBHOOK_SIGNATURE_FAILURES_PER_MINUTE, per client on a domain) holds for every shop domain a
 * source store may have (up to 255 characters) and every client address, IPv6 included.
 *
 * Fix 7, tenancy: storefront platforms send every tenant's webhooks from the same few addresses, so
 * the failures are charged to what a delivery claims (its shop domain, from its client): one
 * tenant's bad signatures spend its own domain's budget, never another tenant's delivery from the
 * same address, while a client spraying forgeries over many domains is still throttled.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildFulfillmentPayload } from './sandbox/server.ts';
import { expectError } from './support/assertions.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { startTestService, type TestService } from './support/service.ts';
import { FULFILLMENTS_PATH, postRawWebhook, uniqueSuffix } from './support/webhooks.ts';

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

/** A fulfillment of an order no job placed: verified, it is acknowledged with no job (200). */
function deliver(shopDomain: string, secret: string, forwardedFor: string) {
  const body = JSON.stringify(buildFulfillmentPayload('custom', { orderId: `ord_${uniqueSuffix()}`, trackingNumbers: ['1Z999'] }));
  return postRawWebhook(service.url, FULFILLMENTS_PATH, { body, secret, shopDomain, topic: 'fulfillments/create', forwardedFor });
}
const forge = (shopDomain: string, forwardedFor: string) => deliver(shopDomain, `whsec_forged_${uniqueSuffix()}`, forwardedFor);

/** `count` source stores of one user on `shopDomain`, each with its own secret; the secrets. */
async function storesOn(user: TestUser, shopDomain: string, count: number): Promise<string[]> {
  const reseller = await createResellerStore(service.api, user.token);
  const secrets: string[] = [];
  for (let i = 0; i < count; i++) {
    const webhookSecret = `whsec_${i}_${uniqueSuffix()}${uniqueSuffix()}`;
    await createSourceStore(service.api, user.token, reseller.id, { platform: 'custom', shopDomain, webhookSecret, vendorTag: `V ${i} ${uniqueSuffix()}` });
    secrets.push(webhookSecret);
  }
  return secrets;
}

const checks = async () => (await service.ctx.metrics.webhookSignatureChecks.get()).values[0]?.value ?? 0;

it("one tenant's bad signatures from a platform's address spend that tenant's budget, and another tenant's deliveries from the address are still accepted", async () => {
  const platformAddress = '198.51.100.20';
  const tenantA = await registerUser(service.api);
  const domainA = `supplier-a-${uniqueSuffix()}.example.com`;
  await storesOn(tenantA, domainA, 1);

  const tenantB = await registerUser(service.api);
  // B's suppliers have never delivered (not proven): one alone on its domain, one on a popular
  // supplier domain that twelve other records share.
  const domainB = `supplier-b-${uniqueSuffix()}.example.com`;
  const [secretB] = await storesOn(tenantB, domainB, 1);
  const crowded = `popular-${uniqueSuffix()}.example.com`;
  await storesOn(await registerUser(service.api), crowded, 12);
  const [secretBOnCrowded] = await storesOn(tenantB, crowded, 1);

  // Tenant A's webhook secret is misconfigured: the platform's address sends A's deliveries with bad signatures.
  const statuses: number[] = [];
  for (let i = 0; i < FAILURES_PER_MINUTE + 2; i++) statuses.push((await forge(domainA, platformAddress)).status);
  expect(statuses).toEqual([...Array(FAILURES_PER_MINUTE).fill(401), 429, 429]);

  // B's tracking, from the same address, is checked and accepted.
  const accepted = await deliver(domainB, secretB!, platformAddress);
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
  const acceptedOnCrowded = await deliver(crowded, secretBOnCrowded!, platformAddress);
  expect(acceptedOnCrowded.status, JSON.stringify(acceptedOnCrowded.body)).toBe(200);
  // A's own domain stays refused from that address until its window ends.
  expectError(await forge(domainA, platformAddress), 429, 'rate_limited');
});

it('a client spraying forged deliveries over many domains is throttled: past the limit a new domain is refused without a scan', async () => {
  const sprayer = '203.0.113.50';
  const fake = () => `fake-${uniqueSuffix()}.example.com`;
  // Domains no record ever had: nothing can verify them, and each is one more failing claim of the client.
  const sprayed = Array.from({ length: FAILURES_PER_MINUTE }, fake);
  for (const domain of sprayed) expect((await forge(domain, sprayer)).status).toBe(401);
  const throttled = await forge(fake(), sprayer);
  expectError(throttled, 429, 'rate_limited');
  expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);

  // A domain given many records (whose scan is the costly part) is refused too, at the cost of the proven senders at most.
  const crowded = `popular-${uniqueSuffix()}.example.com`;
  const secrets = await storesOn(await registerUser(service.api), crowded, 20);
  const before = await checks();
  expectError(await forge(crowded, sprayer), 429, 'rate_limited');
  expect((await checks()) - before).toBeLessThanOrEqual(8);
  // Its real senders are heard from other addresses, and the sprayer's own domains keep their own budgets.
  expect((await deliver(crowded, secrets.at(-1)!, '198.51.100.21')).status).toBe(200);
  expect((await forge(sprayed[0]!, sprayer)).status).toBe(401);
});
