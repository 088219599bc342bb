/**
 * A small client of the service written the way an integrator would: types generated from
 * openapi.json by openapi-typescript (./generated/api.d.ts, made by test/sdk.test.ts) and calls made
 * with openapi-fetch. It type-checks on its own, strictly (./tsconfig.json), so a change of
 * openapi.json that breaks an integrator breaks this file; test/sdk.test.ts then runs its main flow
 * against a running service.
 */
import { randomBytes } from 'node:crypto';
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/api.js';

export type Api = Client<paths>;
type JobStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'dead' | 'skipped';

/** What the flow needs from the world around the service (in the test: the sandbox platform). */
export interface FlowHooks {
  /** Makes the supplier's store refuse every call, until `healSupplier`. */
  breakSupplier(shopDomain: string): void | Promise<void>;
  healSupplier(shopDomain: string): void | Promise<void>;
  /** Puts an order on the reseller's store, with one line from `vendor`, so a sync job can read it. */
  seedResellerOrder(shopDomain: string, orderId: string, vendor: string): void | Promise<void>;
  /** Told every secret the flow sends, so the caller can check that none is ever logged. */
  secretUsed(label: string, value: string): void;
  /** Where the flow's webhook endpoint receives events; told the endpoint's signing secret. */
  webhookReceiver(): { url: string; trust(secret: string): void };
  /** The reseller's platform posts the order's orders/cancelled webhook, signed with `webhookSecret`. */
  cancelResellerOrder(shopDomain: string, webhookSecret: string, orderId: string): Promise<void>;
}

export interface FlowResult {
  resellerStoreId: string;
  sourceStoreId: string;
  job: { id: string; status: JobStatus; attempts: number; sourceOrderId: string | null; statusesSeen: JobStatus[] };
  /** The job's cancellation once the storefront cancelled the order. */
  cancellation: { status: string; outcome: string | null; scope: string; supplierCancelledAt: string | null };
  apiKey: { id: string; prefix: string; revokedAt: string | null; statusAfterRevoke: number; errorCodeAfterRevoke: string };
  auditActions: string[];
  webhookEndpoint: { id: string; secretShownOnce: boolean };
  /** Event types of the reseller store, oldest first. */
  eventTypes: string[];
}

interface Result<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The body of an answer with `status`, or an error naming the call and what came back. */
function expectStatus<T>(label: string, status: number, result: Result<T>): T {
  if (result.response.status !== status || result.data === undefined) {
    throw new Error(`${label}: expected ${status}, got ${result.response.status} ${JSON.stringify(result.error ?? result.data)}`);
  }
  return result.data;
}

async function poll<T>(label: string, probe: () => Promise<T | null>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export function connect(baseUrl: string, bearer?: string): Api {
  return createClient<paths>({ baseUrl, ...(bearer !== undefined && { headers: { Authorization: `Bearer ${bearer}` } }) });
}

/**
 * Register, connect a reseller store, add a supplier, place a sync job that dies on a broken
 * supplier, retry it once the supplier is back, create and revoke an API key, read the audit log.
 */
export async function mainFlow(baseUrl: string, hooks: FlowHooks): Promise<FlowResult> {
  const unique = () => randomBytes(6).toString('hex');
  const secret = (label: string, prefix: string) => {
    const value = `${prefix}${unique()}${unique()}`;
    hooks.secretUsed(label, value);
    return value;
  };

  const anonymous = connect(baseUrl);
  const password = secret('password', 'pw-');
  const registered = expectStatus(
    'register',
    201,
    await anonymous.POST('/v1/auth/register', { body: { email: `sdk-${unique()}@example.com`, password } }),
  );
  const api = connect(baseUrl, registered.accessToken);
  const me = expectStatus('me', 200, await api.GET('/v1/auth/me'));

  const resellerWebhookSecret = secret('reseller webhook secret', 'whsec_');
  const reseller = expectStatus(
    'connect reseller store',
    201,
    await api.POST('/v1/reseller_stores', {
      body: {
        name: 'SDK boutique',
        platform: 'platform_a',
        shopDomain: `sdk-reseller-${unique()}.example.com`,
        accessToken: secret('reseller access token', 'shpat_'),
        webhookSecret: resellerWebhookSecret,
      },
    }),
  );
  const gotReseller = expectStatus('get reseller store', 200, await api.GET('/v1/reseller_stores/{id}', { params: { path: { id: reseller.id } } }));
  if (gotReseller.shopDomain !== reseller.shopDomain) throw new Error('get reseller store: another store came back');

  // An integrator's endpoint, before anything happens: it hears about everything below.
  const receiver = hooks.webhookReceiver();
  const endpoint = expectStatus(
    'create webhook endpoint',
    201,
    await api.POST('/v1/webhook_endpoints', { body: { url: receiver.url, enabledEvents: ['*'], description: 'SDK flow' } }),
  );
  hooks.secretUsed('webhook endpoint signing secret', endpoint.secret);
  receiver.trust(endpoint.secret);
  const gotEndpoint = expectStatus('get webhook endpoint', 200, await api.GET('/v1/webhook_endpoints/{id}', { params: { path: { id: endpoint.id } } }));

  const vendorTag = `SDK Vendor ${unique()}`;
  const supplier = expectStatus(
    'add source store',
    201,
    await api.POST('/v1/reseller_stores/{rst_id}/source_stores', {
      params: { path: { rst_id: reseller.id } },
      body: {
        name: 'SDK supplier',
        platform: 'custom',
        shopDomain: `sdk-supplier-${unique()}.example.com`,
        accessToken: secret('supplier access token', 'sup_'),
        webhookSecret: secret('supplier webhook secret', 'whsec_'),
        vendorTag,
        pricingMode: 'percentage',
        pricingConfig: { type: 'percentage', value: 25 },
      },
    }),
  );
  const gotSupplier = expectStatus(
    'get source store',
    200,
    await api.GET('/v1/reseller_stores/{rst_id}/source_stores/{id}', { params: { path: { rst_id: reseller.id, id: supplier.id } } }),
  );
  if (gotSupplier.vendorTag !== vendorTag) throw new Error('get source store: another store came back');
  const suppliers = expectStatus(
    'list source stores',
    200,
    await api.GET('/v1/reseller_stores/{rst_id}/source_stores', { params: { path: { rst_id: reseller.id }, query: { limit: 10 } } }),
  );
  if (!suppliers.data.some((store) => store.id === supplier.id)) throw new Error('list source stores: the supplier is missing');

  // A sync job on a broken supplier: three automatic retries, then dead.
  const orderId = String(100_000_000 + Math.floor(Math.random() * 800_000_000));
  await hooks.seedResellerOrder(reseller.shopDomain, orderId, vendorTag);
  await hooks.breakSupplier(supplier.shopDomain);
  const created = expectStatus(
    'create sync job',
    201,
    await api.POST('/v1/sync_jobs', { body: { source_store_id: supplier.id, external_order_id: orderId } }),
  );
  const statusesSeen: JobStatus[] = [created.status];
  const again = expectStatus('create the same sync job', 200, await api.POST('/v1/sync_jobs', { body: { source_store_id: supplier.id, external_order_id: orderId } }));
  if (again.id !== created.id) throw new Error('create sync job: not idempotent');

  const jobById = async () => expectStatus('get sync job', 200, await api.GET('/v1/sync_jobs/{id}', { params: { path: { id: created.id } } }));
  const until = (status: JobStatus) =>
    poll(`sync job ${status}`, async () => {
      const job = await jobById();
      if (statusesSeen.at(-1) !== job.status) statusesSeen.push(job.status);
      return job.status === status ? job : null;
    });
  const dead = await until('dead');
  if (dead.errorMessage === null || dead.deadAt === null) throw new Error('a dead job must say why and when');

  await hooks.healSupplier(supplier.shopDomain);
  const retried = expectStatus('retry sync job', 200, await api.POST('/v1/sync_jobs/{id}/retry', { params: { path: { id: created.id } } }));
  if (retried.status !== 'pending' || retried.errorMessage !== null) throw new Error(`retry: expected a clean pending job, got ${retried.status}`);
  statusesSeen.push(retried.status);
  const completed = await until('completed');
  const listed = expectStatus(
    'list sync jobs',
    200,
    await api.GET('/v1/sync_jobs', { params: { query: { reseller_store_id: reseller.id, status: 'completed' } } }),
  );
  if (!listed.data.some((job) => job.id === created.id)) throw new Error('list sync jobs: the completed job is missing');

  // The customer cancels: the supplier order is cancelled, and the job lists its cancellation.
  await hooks.cancelResellerOrder(reseller.shopDomain, resellerWebhookSecret, orderId);
  const cancelledJob = await poll('the cancellation to complete', async () => {
    const job = await jobById();
    const [cancellation] = job.cancellations;
    return cancellation && cancellation.status === 'completed' ? { job, cancellation } : null;
  });

  // An API key acts as its owner until it is revoked.
  const key = expectStatus('create API key', 201, await api.POST('/v1/api_keys', { body: { name: 'SDK integration', environment: 'test' } }));
  hooks.secretUsed('raw API key', key.raw_key);
  const withKey = connect(baseUrl, key.raw_key);
  const keyOwner = expectStatus('me with the API key', 200, await withKey.GET('/v1/auth/me'));
  if (keyOwner.id !== me.id) throw new Error('the API key acts as someone else');
  expectStatus('get sync job with the API key', 200, await withKey.GET('/v1/sync_jobs/{id}', { params: { path: { id: created.id } } }));
  const revoked = await api.DELETE('/v1/api_keys/{id}', { params: { path: { id: key.id } } });
  if (revoked.response.status !== 204) throw new Error(`revoke API key: expected 204, got ${revoked.response.status}`);
  const afterRevoke = await withKey.GET('/v1/auth/me');
  const revokedKey = expectStatus('get API key', 200, await api.GET('/v1/api_keys/{id}', { params: { path: { id: key.id } } }));

  const audit = expectStatus(
    'read audit log',
    200,
    await api.GET('/v1/audit_log', { params: { query: { reseller_store_id: reseller.id, limit: 100 } } }),
  );

  const events = expectStatus(
    'list events',
    200,
    await api.GET('/v1/events', { params: { query: { reseller_store_id: reseller.id, limit: 100 } } }),
  );
  const jobEvents = events.data.filter((event) => event.type.startsWith('sync_job.'));
  for (const event of jobEvents) {
    if (event.resellerStoreId !== reseller.id) throw new Error(`list events: ${event.id} belongs to another store`);
    if (!('fulfillments' in event.data.object) || event.data.object.id !== created.id) throw new Error(`list events: ${event.type} is not about the job`);
  }
  const oneEvent = events.data[0];
  if (oneEvent) expectStatus('get event', 200, await api.GET('/v1/events/{id}', { params: { path: { id: oneEvent.id } } }));

  return {
    resellerStoreId: reseller.id,
    sourceStoreId: supplier.id,
    job: { id: completed.id, status: completed.status, attempts: completed.attempts, sourceOrderId: completed.sourceOrderId, statusesSeen },
    cancellation: {
      status: cancelledJob.cancellation.status,
      outcome: cancelledJob.cancellation.outcome,
      scope: cancelledJob.cancellation.scope,
      supplierCancelledAt: cancelledJob.job.supplierCancelledAt,
    },
    apiKey: {
      id: revokedKey.id,
      prefix: revokedKey.prefix,
      revokedAt: revokedKey.revokedAt,
      statusAfterRevoke: afterRevoke.response.status,
      errorCodeAfterRevoke: afterRevoke.error?.error.code ?? 'none',
    },
    auditActions: audit.data.map((entry) => entry.action).reverse(),
    webhookEndpoint: { id: endpoint.id, secretShownOnce: endpoint.secret.startsWith('whsec_') && !('secret' in gotEndpoint) },
    eventTypes: events.data.map((event) => event.type).reverse(),
  };
}
