/**
 * Flow control at the API (issue 15, points 3 and 5), on two API processes sharing one database:
 * fulfillment webhook verification costs a bounded amount for a domain that strangers gave many
 * source store records, its cached secrets follow changes made through the other process, failed
 * signatures are limited per client on a domain, and in failing domains per client, without refusing
 * a proven sender's delivery or another client's,
 * a user's active source stores are capped, and the auth rate limit counts across processes.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/shared/ids.ts';
import { buildFulfillmentPayload, startSandbox, type Sandbox } from './sandbox/server.ts';
import { expectError } from './support/assertions.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { startTestService, type TestService } from './support/service.ts';
import { FULFILLMENTS_PATH, postRawWebhook } from './support/webhooks.ts';

const FAILURES_PER_MINUTE = 3;
const STORES_PER_USER = 3;
const AUTH_PER_MINUTE = 4;

let sandbox: Sandbox;
/** Two API processes (each with workers) on one database. */
let first: TestService;
let second: TestService;

beforeAll(async () => {
  sandbox = await startSandbox();
  const shared = {
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    JWT_SECRET: randomBytes(32).toString('hex'),
    PLATFORM_BASE_URL: sandbox.baseUrlTemplate,
    WEBHOOK_SIGNATURE_FAILURES_PER_MINUTE: String(FAILURES_PER_MINUTE),
    MAX_SOURCE_STORES_PER_USER: String(STORES_PER_USER),
    // Lets a test speak as several clients (X-Forwarded-For); without the header the client is the loopback address.
    TRUST_PROXY: 'true',
  };
  first = await startTestService(shared);
  second = await startTestService({ ...shared, DATABASE_URL: first.databaseUrl });
}, 60_000);
afterAll(async () => {
  await second?.stop();
  await first?.stop();
  await sandbox?.close();
});

const unique = () => randomBytes(4).toString('hex');

interface Supplier {
  id: string;
  shopDomain: string;
  webhookSecret: string;
}

async function supplierOf(service: TestService, user: TestUser, shopDomain = `supplier-${unique()}.example.com`): Promise<Supplier> {
  const reseller = await createResellerStore(service.api, user.token);
  const webhookSecret = `whsec_${unique()}${unique()}`;
  const store = await createSourceStore(service.api, user.token, reseller.id, { platform: 'custom', shopDomain, webhookSecret });
  return { id: store.id, shopDomain, webhookSecret };
}

/** A fulfillment of an order no job placed: verified, it is acknowledged with no job (200). */
function deliver(service: TestService, shopDomain: string, secret: string, forwardedFor?: string) {
  const body = JSON.stringify(buildFulfillmentPayload('custom', { orderId: `ord_${unique()}`, trackingNumbers: ['1Z999'] }));
  return postRawWebhook(service.url, FULFILLMENTS_PATH, { body, secret, shopDomain, topic: 'fulfillments/create', ...(forwardedFor && { forwardedFor }) });
}

const forged = (service: TestService, shopDomain: string, forwardedFor?: string) => deliver(service, shopDomain, `whsec_forged_${unique()}`, forwardedFor);

/** Inserts `count` source stores of one domain for one made-up owner, as a stranger scripting the API would. */
async function strangerRecords(shopDomain: string, count: number): Promise<void> {
  const ownerId = newId('user');
  const resellerStoreId = newId('resellerStore');
  const rows = Array.from({ length: count }, (_, i) => {
    const id = newId('sourceStore');
    return {
      id,
      vendor: `bogus ${i}`,
      token: first.ctx.secrets.encrypt(`bogus_token_${i}`, id),
      secret: first.ctx.secrets.encrypt(`whsec_bogus_${i}_${unique()}`, id),
    };
  });
  await queryRows(
    first.databaseUrl,
    `insert into source_stores (id, owner_id, reseller_store_id, name, platform, shop_domain, vendor_tag, vendor_key, pricing_mode,
                                pricing_config, access_token_encrypted, webhook_secret_encrypted, created_at)
     select r.id, $1, $2, 'Bogus', 'custom', $3, r.vendor, r.vendor, 'percentage', '{"type":"percentage","value":0}', r.token, r.secret, now()
     from jsonb_to_recordset($4::jsonb) as r(id text, vendor text, token text, secret text)`,
    [ownerId, resellerStoreId, shopDomain, JSON.stringify(rows)],
  );
}

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await run();
  return { value, ms: performance.now() - started };
}


describe('fulfillment webhook verification', () => {
  it('follows changes made through another process: a deleted record stops verifying, a new one verifies at once', async () => {
    const owner = await registerUser(first.api);
    const supplier = await supplierOf(first, owner);
    expect((await deliver(first, supplier.shopDomain, supplier.webhookSecret)).status).toBe(200);

    const stores = await second.api.get(`/v1/reseller_stores`, { token: owner.token });
    const resellerId = stores.body.data[0].id;
    expect((await second.api.delete(`/v1/reseller_stores/${resellerId}/source_stores/${supplier.id}`, { token: owner.token })).status).toBe(204);
    expect((await deliver(first, supplier.shopDomain, supplier.webhookSecret)).status).toBe(401);

    const webhookSecret = `whsec_${unique()}${unique()}`;
    await createSourceStore(second.api, owner.token, resellerId, { platform: 'custom', shopDomain: supplier.shopDomain, webhookSecret });
    expect((await deliver(first, supplier.shopDomain, webhookSecret)).status).toBe(200);
  });

  it('costs a bounded amount for a domain with thousands of records, and never refuses its real sender', async () => {
    const owner = await registerUser(first.api);
    const supplier = await supplierOf(first, owner);
    expect((await deliver(first, supplier.shopDomain, supplier.webhookSecret)).status).toBe(200);
    await strangerRecords(supplier.shopDomain, 2_000);

    // A stranger forging deliveries from its own address: each failure is counted, and past the
    // limit nothing but the domain's recent senders is tried any more.
    // What each one cost: the HMACs computed to check it (webhook_signature_checks_total of that process).
    const checks = async () => (await first.ctx.metrics.webhookSignatureChecks.get()).values[0]?.value ?? 0;
    const answers = [];
    for (let i = 0; i < 20; i++) {
      const before = await checks();
      const value = await forged(first, supplier.shopDomain);
      answers.push({ value, checks: (await checks()) - before });
    }
    // (This file's client already spent part of its budget: the deleted store's delivery above.)
    const statuses = answers.map(({ value }) => value.status);
    const refused = statuses.indexOf(429);
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThanOrEqual(FAILURES_PER_MINUTE);
    expect(statuses.slice(0, refused)).toEqual(Array(refused).fill(401));
    expect(new Set(statuses.slice(refused))).toEqual(new Set([429]));
    expectError(answers.at(-1)!.value, 429, 'rate_limited');
    expect(Number(answers.at(-1)!.value.headers.get('retry-after'))).toBeGreaterThan(0);
    // Checking 2,000 records' secrets per delivery was what made a forged one slow: before the limit a
    // forgery costs the scan, past it no more than the domain's few proven senders.
    expect(Math.min(...answers.slice(0, refused).map(({ checks }) => checks))).toBeGreaterThanOrEqual(2_000);
    expect(Math.max(...answers.slice(refused).map(({ checks }) => checks))).toBeLessThanOrEqual(8);

    // The real supplier, proven by its first delivery, is still heard at once, in both processes.
    for (const service of [first, second]) {
      const real = await timed(() => deliver(service, supplier.shopDomain, supplier.webhookSecret));
      expect(real.value.status).toBe(200);
    }
    const [row] = await queryRows<{ version: number }>(first.databaseUrl, 'select version from source_store_domains where shop_domain = $1', [supplier.shopDomain]);
    expect(row!.version).toBeGreaterThanOrEqual(2_001);
  }, 60_000);

  it('limits failing domains per client as well: past the limit a new domain given many records answers that client 429, one with few is still checked', async () => {
    const client = '192.0.2.44';
    const owner = await registerUser(first.api);
    for (let i = 0; i < FAILURES_PER_MINUTE; i++) expect((await forged(first, (await supplierOf(first, owner)).shopDomain, client)).status).toBe(401);
    // Trying the secrets of a domain strangers gave many records is refused to the client now, in every process.
    const crowded = `crowded-${unique()}.example.com`;
    await strangerRecords(crowded, 50);
    expectError(await forged(second, crowded, client), 429, 'rate_limited');
    // A domain with few records costs no more to check than its proven senders: still checked, and its sender heard.
    const small = await supplierOf(first, await registerUser(first.api));
    expect((await forged(second, small.shopDomain, client)).status).toBe(401);
    expect((await deliver(second, small.shopDomain, small.webhookSecret, client)).status).toBe(200);
  });

  it("never refuses a correctly signed delivery for another client's forgeries, nor a first sender's for its own client's", async () => {
    const domain = `shared-${unique()}.example.com`;
    // Nine resellers' records of one supplier domain, each with its own secret, all proven but the last.
    const senders: Supplier[] = [];
    for (let i = 0; i < 3; i++) {
      const owner = await registerUser(first.api);
      for (let j = 0; j < STORES_PER_USER; j++) senders.push(await supplierOf(first, owner, domain));
    }
    const platformClient = '198.51.100.7';
    for (const sender of senders.slice(0, 8)) expect((await deliver(first, domain, sender.webhookSecret, platformClient)).status).toBe(200);
    const unproven = senders.at(-1)!;
    // And strangers' records whose secrets never signed anything: trying them is what the budgets guard.
    await strangerRecords(domain, 50);

    // A stranger's address spends its budget on the domain...
    const attacker = '203.0.113.9';
    let status = 0;
    for (let i = 0; i <= FAILURES_PER_MINUTE && status !== 429; i++) status = (await forged(first, domain, attacker)).status;
    expect(status).toBe(429);
    // ...which is its own: the platform's address still has every secret tried, the unproven one's included.
    expect((await deliver(second, domain, unproven.webhookSecret, platformClient)).status).toBe(200);

    // The platform's address spends its own budget (another shop of the domain misconfigured)...
    status = 0;
    for (let i = 0; i <= FAILURES_PER_MINUTE && status !== 429; i++) status = (await forged(first, domain, platformClient)).status;
    expect(status).toBe(429);
    // ...yet the domain's first proven senders behind it are still heard. Checking more is budgeted
    // (anyone can prove records of their own), so the ninth waits for the window, like an unproven one.
    for (const sender of senders.slice(0, 8)) expect((await deliver(first, domain, sender.webhookSecret, platformClient)).status).toBe(200);
    expectError(await deliver(first, domain, unproven.webhookSecret, platformClient), 429, 'rate_limited');
    expect((await deliver(first, domain, unproven.webhookSecret, '198.51.100.8')).status).toBe(200);

    // IPv6 clients are counted by their /64: another address of a network that spent its budget is refused too.
    status = 0;
    for (let i = 0; i <= FAILURES_PER_MINUTE && status !== 429; i++) status = (await forged(first, domain, `2001:db8:1:2::${i + 1}`)).status;
    expect(status).toBe(429);
    expectError(await forged(first, domain, '2001:db8:1:2:ffff::9'), 429, 'rate_limited');
    expect((await forged(first, domain, '2001:db8:1:3::1')).status).toBe(401);
  }, 30_000);
});

describe('source stores per user', () => {
  it(`answers 409 source_store_limit_reached past MAX_SOURCE_STORES_PER_USER, counting every reseller store of the user`, async () => {
    const owner = await registerUser(first.api);
    for (let i = 0; i < STORES_PER_USER - 1; i++) await supplierOf(i % 2 ? first : second, owner);
    const reseller = await createResellerStore(first.api, owner.token);
    const body = {
      name: 'One too many',
      platform: 'custom',
      shopDomain: `supplier-${unique()}.example.com`,
      accessToken: `sup_${unique()}`,
      webhookSecret: `whsec_${unique()}`,
      vendorTag: 'Extra',
      pricingMode: 'percentage',
      pricingConfig: { type: 'percentage', value: 10 },
    };

    // One place left: of concurrent creations through both processes, only one takes it.
    const raced = await Promise.all(
      [first, second, first, second, first, second].map((service, i) =>
        service.api.post(`/v1/reseller_stores/${reseller.id}/source_stores`, { token: owner.token, body: { ...body, vendorTag: `Race ${i}` } }),
      ),
    );
    expect(raced.map((response) => response.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    for (const refused of raced.filter((response) => response.status === 409)) {
      expect(refused.body.error.details).toEqual({ reason: 'source_store_limit_reached' });
    }

    const refused = await second.api.post(`/v1/reseller_stores/${reseller.id}/source_stores`, { token: owner.token, body });
    expectError(refused, 409, 'conflict');
    expect(refused.body.error.details).toEqual({ reason: 'source_store_limit_reached' });
  });
});

describe('the auth rate limit', () => {
  let limitedA: TestService;
  let limitedB: TestService;
  beforeAll(async () => {
    const shared = { JWT_SECRET: randomBytes(32).toString('hex'), ENCRYPTION_KEY: randomBytes(32).toString('base64'), AUTH_RATE_LIMIT_PER_MINUTE: String(AUTH_PER_MINUTE) };
    limitedA = await startTestService(shared);
    limitedB = await startTestService({ ...shared, DATABASE_URL: limitedA.databaseUrl });
  });
  afterAll(async () => {
    await limitedB?.stop();
    await limitedA?.stop();
  });

  it('counts requests across API processes, not per process', async () => {
    const login = (service: TestService) => service.api.post('/v1/auth/login', { body: { email: `nobody-${unique()}@example.com`, password: 'not-a-password' } });
    const statuses = [];
    for (let i = 0; i < AUTH_PER_MINUTE; i++) statuses.push((await login(i % 2 ? limitedB : limitedA)).status);
    expect(statuses).toEqual(Array(AUTH_PER_MINUTE).fill(401));
    const over = await login(limitedA);
    expectError(over, 429, 'rate_limited');
    expectError(await login(limitedB), 429, 'rate_limited');
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
