/**
 * Issue 6, item 5 (tenancy): every route of the contract with an id in its path, derived from the
 * contract so a new route is covered (or fails here until it is given an id to try), is called
 *   - as a second user (with a JWT and with an API key) on the first user's ids: 404 `not_found`,
 *     indistinguishable from a missing id (decisions.md, "Ownership");
 *   - with the first user's own revoked API key: 401 `unauthorized` (interface.md 5.5), as is every
 *     other authenticated route.
 * The first user's resources are untouched afterwards. Bodies are valid, so validation never gets
 * to answer before ownership does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../sandbox/server.ts';
import { queryRows } from '../support/database.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { waitFor } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';
import {
  ChaosClient,
  createApiKey,
  createReseller,
  createSupplier,
  registerUser,
  unique,
  type ChaosResponse,
  type ChaosUser,
  type ResellerFixture,
  type SupplierFixture,
} from './support/client.ts';
import { deliverUntilAccepted } from './support/deliverer.ts';
import { itLeaksNoSecret, ledger } from './support/ledger.ts';
import { contractRoutes, fillPath, type ContractRoute } from './support/routes.ts';

interface Tenant {
  user: ChaosUser;
  apiKey: { id: string; rawKey: string };
  reseller: ResellerFixture;
  supplier: SupplierFixture;
  job: string;
  /** A completed cancellation of the job (its order was cancelled on the storefront). */
  cancellation: string;
  /** A dead fulfillment of the job (retryable by its owner: only ownership can refuse the call). */
  fulfillment: string;
  endpoint: string;
  delivery: string;
  event: string;
  /** An open entry of the store's divergence list (its job dead, as if). */
  divergence: string;
}

let sandbox: Sandbox;
let receiver: WebhookReceiver;
let service: TestService;
let client: ChaosClient;
let alice: Tenant;
let bob: Tenant;
let aliceRevokedKey: string;
let aliceBefore: string;

const MISSING = {
  rst: 'rst_0000000000000000000000000000ffff',
  sst: 'sst_0000000000000000000000000000ffff',
  job: 'job_0000000000000000000000000000ffff',
  key: 'key_0000000000000000000000000000ffff',
  we: 'we_0000000000000000000000000000ffff',
  dlv: 'dlv_0000000000000000000000000000ffff',
  evt: 'evt_0000000000000000000000000000ffff',
  div: 'div_0000000000000000000000000000ffff',
  can: 'can_0000000000000000000000000000ffff',
  ful: 'ful_0000000000000000000000000000ffff',
};

type Kind = keyof typeof MISSING;

/** Which kind of resource a path parameter names. A new kind of id needs a line here. */
function kindOf(route: ContractRoute, param: string): Kind {
  if (param === 'rst_id') return 'rst';
  if (param === 'delivery_id') return 'dlv';
  if (param === 'divergence_id') return 'div';
  if (param === 'cancellation_id') return 'can';
  if (param === 'fulfillment_id') return 'ful';
  if (param === 'id') {
    if (route.path.startsWith('/v1/webhook_endpoints/')) return 'we';
    if (route.path.startsWith('/v1/events/')) return 'evt';
    if (route.path.startsWith('/v1/reseller_stores/:rst_id/source_stores/')) return 'sst';
    if (route.path.startsWith('/v1/reseller_stores/')) return 'rst';
    if (route.path.startsWith('/v1/sync_jobs/')) return 'job';
    if (route.path.startsWith('/v1/api_keys/')) return 'key';
  }
  throw new Error(`tenancy matrix: no fixture for :${param} in ${route.method} ${route.path}; add one`);
}

const idsOf = (tenant: Tenant): Record<Kind, string> => ({
  rst: tenant.reseller.id,
  sst: tenant.supplier.id,
  job: tenant.job,
  key: tenant.apiKey.id,
  we: tenant.endpoint,
  dlv: tenant.delivery,
  evt: tenant.event,
  div: tenant.divergence,
  can: tenant.cancellation,
  ful: tenant.fulfillment,
});

/** A body the route accepts, so that only ownership can refuse the call. */
function validBody(route: ContractRoute): unknown {
  switch (route.name) {
    case 'resellerStores.update':
      return { name: 'Hijacked' };
    case 'sourceStores.create':
      return {
        name: 'Intruder',
        platform: 'custom',
        shopDomain: `intruder-${unique()}.example.com`,
        accessToken: `tok_${unique(16)}`,
        webhookSecret: `whsec_${unique(16)}`,
        vendorTag: `Intruder ${unique()}`,
        pricingMode: 'percentage',
        pricingConfig: { type: 'percentage', value: 10 },
      };
    case 'sourceStores.update':
      return { name: 'Hijacked', pricingMode: 'percentage', pricingConfig: { type: 'percentage', value: -50 } };
    case 'webhookEndpoints.update':
      return { url: receiver.url('/hijacked'), description: 'Hijacked' };
    default:
      return undefined;
  }
}

async function newTenant(): Promise<Tenant> {
  const user = await registerUser(client);
  const apiKey = await createApiKey(client, user.token, 'live');
  const reseller = await createReseller(client, user.token);
  const supplier = await createSupplier(client, user.token, reseller.id);
  const order = sandbox.buildOrderPayload('platform_a', { id: Number(`7${Date.now() % 1_000_000}`), lines: [{ sku: 'S', title: 'T', vendor: supplier.vendorTag, quantity: 1, price: '5.00' }] });
  const orderEvent = (topic: 'orders/create' | 'orders/cancelled', payload: unknown) => ({
    url: () => `${service.url}/v1/orders/webhook`,
    shopDomain: reseller.shopDomain,
    secret: reseller.webhookSecret,
    topic,
    payload,
  });
  const delivery = await deliverUntilAccepted(orderEvent('orders/create', order));
  const jobId: string = delivery.accepted.body.syncJobIds[0];
  // The order is then cancelled: the job gets a cancellation (a resource of its own, with a retry route).
  await waitFor(async () => (await client.get(`/v1/sync_jobs/${jobId}`, { token: user.token })).body.status === 'completed', 15_000, 'the job placed');
  await deliverUntilAccepted(orderEvent('orders/cancelled', { ...order, cancelled_at: new Date().toISOString() }));
  const cancellation: string = await waitFor(async () => {
    const [first] = (await client.get(`/v1/sync_jobs/${jobId}`, { token: user.token })).body.cancellations;
    return first?.status === 'completed' && first.id;
  }, 15_000, 'the job cancelled');
  const path = `/tenant-${unique()}`;
  const endpoint = await client.post('/v1/webhook_endpoints', { token: user.token, body: { url: receiver.url(path), enabledEvents: ['*'] } });
  expect(endpoint.status).toBe(201);
  receiver.trust(path, [endpoint.body.secret]);
  const ping = await client.post(`/v1/webhook_endpoints/${endpoint.body.id}/test`, { token: user.token });
  expect(ping.status).toBe(202);
  const divergence = `div_${unique(16)}`;
  await queryRows(
    service.databaseUrl,
    `insert into divergences (id, owner_id, reseller_store_id, sync_job_id, type, status, subject_id, detail, since)
     select $1, owner_id, reseller_store_id, id, 'job_dead', 'open', id, 'tenancy fixture', now() from sync_jobs where id = $2`,
    [divergence, jobId],
  );
  const fulfillment = `ful_${unique(16)}`;
  await queryRows(
    service.databaseUrl,
    `insert into fulfillments (id, owner_id, reseller_store_id, sync_job_id, dedupe_key, status, attempts, retries_left, tracking, error_message, dead_at, created_at, updated_at)
     select $1, owner_id, reseller_store_id, id, $1, 'dead', 4, 0, '{"numbers":["TENANCY-1"],"urls":[],"company":null}', 'tenancy fixture', now(), now(), now() from sync_jobs where id = $2`,
    [fulfillment, jobId],
  );
  return { user, apiKey, reseller, supplier, job: jobId, cancellation, fulfillment, endpoint: endpoint.body.id, delivery: ping.body.id, event: ping.body.eventId, divergence };
}

/** Alice's rows as stored: whatever a foreign call might have changed. */
async function aliceState(): Promise<string> {
  const rows = await Promise.all([
    queryRows(service.databaseUrl, 'select id, name, deleted_at from reseller_stores where owner_id = (select owner_id from reseller_stores where id = $1) order by id', [alice.reseller.id]),
    queryRows(service.databaseUrl, 'select id, name, pricing_config, deleted_at from source_stores where reseller_store_id = $1 order by id', [alice.reseller.id]),
    queryRows(service.databaseUrl, 'select id, status, attempts, queue_message_id from sync_jobs where reseller_store_id = $1 order by id', [alice.reseller.id]),
    queryRows(service.databaseUrl, 'select id, revoked_at from api_keys where id = $1', [alice.apiKey.id]),
    queryRows(service.databaseUrl, 'select id, status, attempts, queue_message_id from cancellations where reseller_store_id = $1 order by id', [alice.reseller.id]),
    queryRows(service.databaseUrl, 'select id, url, description, status, secret_encrypted, updated_at from webhook_endpoints where id = $1', [alice.endpoint]),
    queryRows(service.databaseUrl, 'select id, status, attempts, queue_message_id from webhook_deliveries where endpoint_id = $1 order by id', [alice.endpoint]),
    queryRows(service.databaseUrl, 'select id, status, dismissed_at from divergences where reseller_store_id = $1 order by id', [alice.reseller.id]),
  ]);
  return JSON.stringify(rows);
}

beforeAll(async () => {
  sandbox = await startSandbox();
  receiver = await WebhookReceiver.start();
  service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, SYNC_RETRY_BASE_DELAY_MS: '100' });
  ledger.watch('in-process service', () => service.logs);
  client = new ChaosClient(service.url);
  alice = await newTenant();
  bob = await newTenant();
  // Alice's job is finished, so a (wrongly allowed) retry would have nothing to wait for.
  await waitFor(async () => (await client.get(`/v1/sync_jobs/${alice.job}`, { token: alice.user.token })).body.status === 'completed', 15_000, "alice's job");
  // Her deliveries are settled too, so nothing moves under the comparison of her rows.
  await waitFor(async () => (await queryRows(service.databaseUrl, `select 1 from webhook_deliveries where owner_id = (select owner_id from webhook_endpoints where id = $1) and status = 'pending'`, [alice.endpoint])).length === 0, 15_000, "alice's deliveries");
  const doomed = await createApiKey(client, alice.user.token, 'test');
  aliceRevokedKey = doomed.rawKey;
  expect((await client.get('/v1/auth/me', { token: aliceRevokedKey })).status).toBe(200);
  expect((await client.delete(`/v1/api_keys/${doomed.id}`, { token: alice.user.token })).status).toBe(204);
  aliceBefore = await aliceState();
});

afterAll(async () => {
  await service?.stop();
  ledger.flush();
  await sandbox?.close();
  await receiver?.close();
});

const routes = contractRoutes();
// Signed webhooks are not a user's calls: a source store id in a webhook URL is checked by its signature (test/webhooks.fulfillments.per-store.test.ts).
const idRoutes = routes.filter((route) => route.params.length > 0 && route.auth !== 'webhook');

/** Every way to name Alice's resource on a route: all her ids, and for nested ones her child under Bob's parent. */
function foreignPaths(route: ContractRoute): { label: string; foreign: string; missing: string }[] {
  const paths = [
    {
      label: "alice's ids",
      foreign: fillPath(route.path, Object.fromEntries(route.params.map((p) => [p, idsOf(alice)[kindOf(route, p)]]))),
      missing: fillPath(route.path, Object.fromEntries(route.params.map((p) => [p, MISSING[kindOf(route, p)]]))),
    },
  ];
  if (route.params.length > 1) {
    paths.push({
      label: "alice's child under bob's parent",
      foreign: fillPath(route.path, Object.fromEntries(route.params.map((p) => [p, isParent(route, p) ? bobsParent(route, p) : idsOf(alice)[kindOf(route, p)]]))),
      missing: fillPath(route.path, Object.fromEntries(route.params.map((p) => [p, isParent(route, p) ? bobsParent(route, p) : MISSING[kindOf(route, p)]]))),
    });
  }
  return paths;
}

/** The first of two path parameters names the parent (a reseller store, a webhook endpoint). */
const isParent = (route: ContractRoute, param: string) => route.params.length > 1 && route.params[0] === param;
const bobsParent = (route: ContractRoute, param: string) => idsOf(bob)[kindOf(route, param)];

function expectNotFound(response: ChaosResponse, what: string): void {
  expect(response.status, `${what}: ${response.text}`).toBe(404);
  expect(response.body.error.code, what).toBe('not_found');
  expect(response.headers.get('x-request-id'), what).toBe(response.body.request_id);
}

describe('the tenancy matrix', () => {
  it('covers every route with an id', () => {
    expect(idRoutes.map((route) => route.name).sort()).toEqual(
      expect.arrayContaining(['apiKeys.get', 'apiKeys.revoke', 'resellerStores.get', 'resellerStores.update', 'resellerStores.remove', 'sourceStores.create', 'sourceStores.list', 'sourceStores.get', 'sourceStores.update', 'sourceStores.remove', 'syncJobs.get', 'syncJobs.retry', 'events.get', 'webhookEndpoints.get', 'webhookEndpoints.update', 'webhookEndpoints.remove', 'webhookEndpoints.rotateSecret', 'webhookEndpoints.test', 'webhookEndpoints.listDeliveries', 'webhookEndpoints.retryDelivery']),
    );
    for (const route of idRoutes) for (const param of route.params) expect(() => kindOf(route, param)).not.toThrow();
  });

  it.each(idRoutes.map((route) => [`${route.method} ${route.path}`, route] as const))(
    '%s: 404 for another user (JWT or API key), exactly as for a missing id',
    async (_label, route) => {
      // Routes for a signed-in user only refuse any API key before looking at the id (apiKeys.revoke).
      const credentials = route.auth === 'access_token' ? ([['JWT', bob.user.token]] as const) : ([['JWT', bob.user.token], ['API key', bob.apiKey.rawKey]] as const);
      for (const [credential, token] of credentials) {
        for (const { label, foreign, missing } of foreignPaths(route)) {
          const what = `${route.method} ${foreign} as bob with his ${credential} (${label})`;
          const a = await client.request(route.method, foreign, { token, body: validBody(route) });
          const b = await client.request(route.method, missing, { token, body: validBody(route) });
          expectNotFound(a, what);
          expectNotFound(b, `${what}, missing id`);
          const { request_id: _a, ...foreignBody } = a.body;
          const { request_id: _b, ...missingBody } = b.body;
          expect(foreignBody, what).toEqual(missingBody);
          expect([...a.headers.keys()].sort(), what).toEqual([...b.headers.keys()].sort());
        }
      }
    },
  );

  it.each(routes.filter((route) => route.auth === 'bearer' || route.auth === 'access_token').map((route) => [`${route.method} ${route.path}`, route] as const))(
    '%s: 401 with a revoked API key, even on its owner\'s own resources',
    async (_label, route) => {
      const path = fillPath(route.path, Object.fromEntries(route.params.map((p) => [p, idsOf(alice)[kindOf(route, p)]])));
      const body = route.name === 'apiKeys.create' ? { name: 'new', environment: 'test' } : route.name === 'resellerStores.create' ? { name: 'X', platform: 'custom', shopDomain: `x-${unique()}.example.com`, accessToken: `t_${unique(16)}`, webhookSecret: `s_${unique(16)}` } : validBody(route);
      const response = await client.request(route.method, path, { token: aliceRevokedKey, body });
      expect(response.status, `${route.method} ${path}: ${response.text}`).toBe(401);
      expect(response.body.error.code).toBe('unauthorized');
    },
  );

  it("left alice's resources exactly as they were", async () => {
    expect(await aliceState()).toBe(aliceBefore);
    // And they are still hers to use.
    for (const path of [`/v1/reseller_stores/${alice.reseller.id}`, `/v1/reseller_stores/${alice.reseller.id}/source_stores/${alice.supplier.id}`, `/v1/sync_jobs/${alice.job}`, `/v1/api_keys/${alice.apiKey.id}`, `/v1/webhook_endpoints/${alice.endpoint}`, `/v1/events/${alice.event}`]) {
      expect((await client.get(path, { token: alice.user.token })).status, path).toBe(200);
      expect((await client.get(path, { token: alice.apiKey.rawKey })).status, path).toBe(200);
    }
  });
});

itLeaksNoSecret();
