/**
 * Server-side request forgery (events.md, "Webhook endpoints"; issue 16 item 4): in production
 * only https:// endpoints, and no host that is or resolves to a loopback, private, link-local,
 * unique-local, unspecified or metadata address, refused at creation (400) and at send time on the
 * address actually connected to; the same guard for store domains when no PLATFORM_BASE_URL is set.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forbiddenRange, guardedAgent, shopDomainRefusal, UnsafeAddressError, urlRefusal } from '../src/shared/url-safety.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { startTestService, type TestService } from './support/service.ts';
import { waitFor } from './support/wait.ts';
import { WebhookReceiver } from './support/webhook-receiver.ts';

const PRODUCTION = { httpsOnly: true, allowPrivateAddresses: false };

const FORBIDDEN_HOSTS = ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '0.0.0.0', '100.64.0.1', '[::1]', '[::]', '[fc00::1]', '[fd00:ec2::254]', '[fe80::1]', '[::ffff:127.0.0.1]', '[::ffff:a00:1]', 'localhost', 'api.localhost'];

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await WebhookReceiver.start();
});
afterAll(async () => {
  await receiver?.close();
});

describe('address classification', () => {
  it('refuses every non-public range, IPv4-mapped IPv6 judged as the IPv4 it carries', () => {
    for (const address of ['127.0.0.1', '10.0.0.1', '172.31.255.255', '192.168.0.10', '169.254.169.254', '0.0.0.0', '100.64.0.1', '::1', '::', 'fc00::1', 'fd00:ec2::254', 'fe80::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254', '64:ff9b::a00:1', '224.0.0.1']) {
      expect(forbiddenRange(address), address).not.toBeNull();
    }
    expect(forbiddenRange('::ffff:127.0.0.1')).toBe('loopback');
    expect(forbiddenRange('169.254.169.254')).toBe('linkLocal');
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) expect(forbiddenRange(address), address).toBeNull();
  });

  it('refuses http:// and private hosts in production at registration; allows them when private addresses are allowed', async () => {
    expect(await urlRefusal('http://hooks.example.com/in', PRODUCTION)).toBe('must be an https:// URL');
    for (const host of FORBIDDEN_HOSTS) expect(await urlRefusal(`https://${host}/hook`, PRODUCTION), host).toMatch(/^must not point at /);
    // The URL parser's reading of odd spellings is what is checked: 0x7f.1 and 2130706433 are 127.0.0.1.
    expect(await urlRefusal('https://0x7f.1/hook', PRODUCTION)).toMatch(/127\.0\.0\.1/);
    expect(await urlRefusal('https://2130706433/hook', PRODUCTION)).toMatch(/127\.0\.0\.1/);
    expect(await urlRefusal('https://93.184.216.34/hook', PRODUCTION)).toBeNull();
    expect(await urlRefusal('http://127.0.0.1:4000/hook', { httpsOnly: false, allowPrivateAddresses: true })).toBeNull();
    expect(await urlRefusal('https://127.0.0.1/hook', { httpsOnly: true, allowPrivateAddresses: true })).toBeNull();
  });

  it('refuses IPv4-compatible IPv6 (::/96) and port 0, in URLs and shop domains', async () => {
    // As the URL parser writes them ([::127.0.0.1] is [::7f00:1]), and even when the IPv4 inside is public.
    for (const address of ['::7f00:1', '::a00:1', '::a9fe:a9fe', '::808:808']) expect(forbiddenRange(address), address).toBe('ipv4Compatible');
    expect(forbiddenRange('::1')).toBe('loopback');
    expect(await urlRefusal('https://[::127.0.0.1]/hook', PRODUCTION)).toMatch(/^must not point at .*ipv4Compatible/);
    expect(await urlRefusal('https://hooks.example.com:0/in', PRODUCTION)).toBe('must not use port 0');
    expect(await urlRefusal('https://93.184.216.34:00/hook', PRODUCTION)).toBe('must not use port 0');
    const settings = { platformBaseUrl: null, urlPolicy: PRODUCTION };
    expect(await shopDomainRefusal('[::127.0.0.1]', settings)).toMatch(/ipv4Compatible/);
    expect(await shopDomainRefusal('93.184.216.34:0', settings)).toBe('must not use port 0');
    expect(await shopDomainRefusal('93.184.216.34:443', settings)).toBeNull();
  });

  it('refuses at connection time, on the address connected to, whether the host is an address or a name', async () => {
    const agent = guardedAgent(PRODUCTION);
    const port = new URL(receiver.baseUrl).port;
    try {
      for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]', '[::1]']) {
        const error = await request(`http://${host}:${port}/guarded`, { method: 'POST', body: '{}', dispatcher: agent }).then(() => null, (caught: unknown) => caught);
        expect(error, host).toBeInstanceOf(UnsafeAddressError);
      }
      expect(receiver.at('/guarded')).toEqual([]);
    } finally {
      await agent.close();
    }
  });
});

describe('in production', () => {
  let service: TestService;
  let user: TestUser;

  beforeAll(async () => {
    service = await startTestService({ NODE_ENV: 'production' });
    user = await registerUser(service.api);
  });
  afterAll(async () => {
    await service?.stop();
  });

  // Not a URL rule, but this is the file's production service: /metrics is closed there without a token.
  it('closes GET /metrics in production when METRICS_TOKEN is not set, saying what to set', async () => {
    const refused = await service.api.get('/metrics', { headers: { authorization: 'Bearer anything-at-all-0123456789' } });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toMatchObject({ code: 'unauthorized', message: expect.stringContaining('closed in production until METRICS_TOKEN is set') });
  });

  it('refuses webhook endpoints on http:// or on private addresses with 400, also when the URL is changed', async () => {
    const http = await service.api.post('/v1/webhook_endpoints', { token: user.token, body: { url: 'http://hooks.example.com/in', enabledEvents: ['*'] } });
    expect(http.status).toBe(400);
    expect(http.body.error).toMatchObject({ code: 'validation_failed', param: 'url' });
    for (const host of FORBIDDEN_HOSTS) {
      const response = await service.api.post('/v1/webhook_endpoints', { token: user.token, body: { url: `https://${host}/hook`, enabledEvents: ['*'] } });
      expect(response.status, host).toBe(400);
      expect(response.body.error).toMatchObject({ code: 'validation_failed', param: 'url', message: expect.stringMatching(/must not point at/) });
    }
    const created = await service.api.post('/v1/webhook_endpoints', { token: user.token, body: { url: 'https://hooks.invalid/in', enabledEvents: ['*'] } });
    expect(created.status).toBe(201);
    const changed = await service.api.patch(`/v1/webhook_endpoints/${created.body.id}`, { token: user.token, body: { url: 'https://169.254.169.254/latest/meta-data/' } });
    expect(changed.status).toBe(400);
    expect((await service.api.get(`/v1/webhook_endpoints/${created.body.id}`, { token: user.token })).body.url).toBe('https://hooks.invalid/in');
  });

  it('refuses a delivery at send time when the host now points at a private address (DNS changed)', async () => {
    const created = await service.api.post('/v1/webhook_endpoints', { token: user.token, body: { url: 'https://hooks.invalid/in', enabledEvents: ['*'] } });
    expect(created.status).toBe(201);
    for (const host of ['127.0.0.1', 'localhost']) {
      const path = `/dns-changed-${host}`;
      // What a DNS change would do to the registered host: the receiver on loopback would answer 200.
      await queryRows(service.databaseUrl, 'update webhook_endpoints set url = $2 where id = $1', [created.body.id, `http://${host}:${new URL(receiver.baseUrl).port}${path}`]);
      const queued = await service.api.post(`/v1/webhook_endpoints/${created.body.id}/test`, { token: user.token });
      expect(queued.status).toBe(202);
      const [delivery] = await waitFor(async () => {
        const [row] = await queryRows<{ attempts: number; last_error: string | null }>(service.databaseUrl, 'select attempts, last_error from webhook_deliveries where id = $1', [queued.body.id]);
        return row && row.attempts > 0 && [row];
      }, 10_000, 'the first attempt');
      expect(delivery!.last_error).toMatch(host === 'localhost' ? /^refused to connect to localhost, which resolves to an address in the loopback range/ : /^refused to connect to 127\.0\.0\.1 \(loopback address\)/);
      // A host name's address is never said: a tenant could map the internal network through it.
      if (host === 'localhost') expect(delivery!.last_error).not.toMatch(/127\.0\.0\.1|::1/);
      expect(receiver.at(path)).toEqual([]);
    }
  });

  it('refuses store shop domains that are private addresses, and platform calls to them', async () => {
    for (const shopDomain of ['127.0.0.1', '10.0.0.1', '169.254.169.254', 'localhost.localhost']) {
      const response = await service.api.post('/v1/reseller_stores', {
        token: user.token,
        body: { name: 'Shop', platform: 'platform_a', shopDomain, accessToken: 'shpat_0123456789abcdef', webhookSecret: 'whsec_0123456789abcdef' },
      });
      expect(response.status, shopDomain).toBe(400);
      expect(response.body.error).toMatchObject({ code: 'validation_failed', param: 'shopDomain' });
    }
    const reseller = await createResellerStore(service.api, user.token, { shopDomain: `shop-${Date.now()}.invalid` });
    const refused = await service.api.post(`/v1/reseller_stores/${reseller.id}/source_stores`, {
      token: user.token,
      body: { name: 'Supplier', platform: 'custom', shopDomain: '10.1.2.3', accessToken: 'sup_0123456789abcdef', webhookSecret: 'whsec_0123456789abcdef', vendorTag: 'Acme', pricingMode: 'percentage', pricingConfig: { type: 'percentage', value: 10 } },
    });
    expect(refused.status).toBe(400);
    const supplier = await createSourceStore(service.api, user.token, reseller.id, { shopDomain: `supplier-${Date.now()}.invalid` });

    // The reseller's domain now points at loopback: the worker's call to read the order is refused.
    await queryRows(service.databaseUrl, 'update reseller_stores set shop_domain = $2 where id = $1', [reseller.id, '127.0.0.1']);
    const job = await service.api.post('/v1/sync_jobs', { token: user.token, body: { source_store_id: supplier.id, external_order_id: '123456' } });
    expect(job.status).toBe(201);
    const failed = await waitFor(async () => {
      const response = await service.api.get(`/v1/sync_jobs/${job.body.id}`, { token: user.token });
      return response.body.errorMessage && response.body;
    }, 15_000, 'the first attempt');
    expect(failed.errorMessage).toContain('refused to connect to 127.0.0.1 (loopback address)');
  });
});

describe('in production with WEBHOOK_ALLOW_PRIVATE_URLS=true', () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' });
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('accepts private https:// addresses, still not http://', async () => {
    const user = await registerUser(service.api);
    const created = await service.api.post('/v1/webhook_endpoints', { token: user.token, body: { url: 'https://10.0.0.7/hook', enabledEvents: ['*'] } });
    expect(created.status).toBe(201);
    const http = await service.api.post('/v1/webhook_endpoints', { token: user.token, body: { url: 'http://10.0.0.7/hook', enabledEvents: ['*'] } });
    expect(http.status).toBe(400);
  });
});
