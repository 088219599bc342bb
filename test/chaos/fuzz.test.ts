/**
 * Issue 6, item 4 (API): property-based requests against every route of the contract. Each run
 * picks hostile path parameters, query strings, headers, content types, methods and bodies (odd
 * and huge Unicode, NUL and lone surrogates, wrong JSON types, broken JSON, binary, deep nesting,
 * bodies over 1 MiB, credentials of every kind), signed correctly or not for the webhooks. Whatever
 * is sent, the answer is never a 5xx, and every 4xx is the error envelope of decisions.md with the
 * request id of its X-Request-Id header, and every status is one the route's contract declares.
 *
 * Issue 18 added bodies in every content encoding (compressed, not compressed, truncated, bombs,
 * unknown encodings), and webhook orders in every ISO 4217 currency with amounts and quantities
 * from valid to absurd (1e300, 2^53 + 2, 400 digits): each is routed or refused exactly as the limits
 * say, and no supplier ever receives an amount or quantity that is not exact.
 */
import { connect } from 'node:net';
import { brotliCompressSync, brotliDecompressSync, deflateSync, gunzipSync, gzipSync, inflateSync, zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import { data as iso4217 } from 'currency-codes';
import fc from 'fast-check';
import { MAX_AMOUNT_MINOR, MAX_QUANTITY } from '../../contract/limits.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signPayload } from '../../src/webhooks/signature.ts';
import { startSandbox, type Sandbox } from '../sandbox/server.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { waitFor } from '../support/wait.ts';
import {
  ChaosClient,
  createApiKey,
  createReseller,
  createSupplier,
  registerUser,
  type ChaosResponse,
  type ChaosUser,
  type ResellerFixture,
  type SupplierFixture,
} from './support/client.ts';
import { deliverUntilAccepted } from './support/deliverer.ts';
import { itLeaksNoSecret, ledger } from './support/ledger.ts';
import { contractRoutes, fillPath, type ContractRoute } from './support/routes.ts';

/** FUZZ_RUNS=500 for a longer hunt; FUZZ_SEED=<the seed a failure printed> to replay it. */
const RUNS_PER_ROUTE = Number(process.env.FUZZ_RUNS ?? 45);
const REPLAY = process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {};
const ERROR_FIELDS = ['code', 'message', 'param', 'details'];

let sandbox: Sandbox;
let service: TestService;
let client: ChaosClient;
let user: ChaosUser;
let apiKey: string;
let revokedKey: string;
let reseller: ResellerFixture;
let supplier: SupplierFixture;
const ids = { rst: '', sst: '', job: '', key: '', we: '', dlv: '', evt: '' };

beforeAll(async () => {
  sandbox = await startSandbox();
  service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, SYNC_RETRY_BASE_DELAY_MS: '100' });
  ledger.watch('in-process service', () => service.logs);
  client = new ChaosClient(service.url);
  user = await registerUser(client);
  const key = await createApiKey(client, user.token, 'live');
  apiKey = key.rawKey;
  ids.key = key.id;
  const revoked = await createApiKey(client, user.token, 'test');
  revokedKey = revoked.rawKey;
  expect((await client.delete(`/v1/api_keys/${revoked.id}`, { token: user.token })).status).toBe(204);
  reseller = await createReseller(client, user.token);
  supplier = await createSupplier(client, user.token, reseller.id);
  ids.rst = reseller.id;
  ids.sst = supplier.id;
  const delivery = await deliverUntilAccepted({
    url: () => `${service.url}/v1/orders/webhook`,
    shopDomain: reseller.shopDomain,
    secret: reseller.webhookSecret,
    topic: 'orders/create',
    payload: sandbox.buildOrderPayload('platform_a', { id: 4242, lines: [{ sku: 'S', title: 'T', vendor: supplier.vendorTag, quantity: 1, price: '1.00' }] }),
  });
  ids.job = delivery.accepted.body.syncJobIds[0];
  // Deliveries go nowhere: nothing listens on the discard port of loopback.
  const endpoint = await client.post('/v1/webhook_endpoints', { token: user.token, body: { url: 'http://127.0.0.1:9/fuzz', enabledEvents: ['sync_job.created'] } });
  ids.we = endpoint.body.id;
  const ping = await client.post(`/v1/webhook_endpoints/${ids.we}/test`, { token: user.token });
  ids.dlv = ping.body.id;
  ids.evt = ping.body.eventId;
});

afterAll(async () => {
  await service?.stop();
  ledger.flush();
  await sandbox?.close();
});

// ---------------------------------------------------------------------------------------------
// What to send

const NASTY = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\u202eevil',
  '\ufeffbom',
  '\u200b\u200c\u200d',
  '𝕳𝖊𝖑𝖑𝖔 🧨👩🏽‍🚀',
  'Z̤̔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇',
  'ﷺ',
  "' OR 1=1 --",
  '"; drop table users; --',
  '${jndi:ldap://x/a}',
  '{{7*7}}',
  '<script>alert(1)</script>',
  '../../../etc/passwd',
  '%00',
  '%',
  '%E0%A4%A',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  'NaN',
  '1e309',
  '-0',
  '9'.repeat(400),
  'rst_0000000000000000000000000000ffff',
];

/** Percent-encoding of any string; lone surrogates (which have no UTF-8) become U+FFFD first. */
const encodeComponent = (value: string) => encodeURIComponent(value.toWellFormed());

const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...NASTY), weight: 4 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }), weight: 2 },
  { arbitrary: fc.tuple(fc.string({ unit: 'binary', minLength: 1, maxLength: 4 }), fc.integer({ min: 200, max: 20_000 })).map(([s, n]) => s.repeat(n)), weight: 1 },
);

/** Anything where a value of some type is expected. */
const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 2 ** 53 + 1, 1e308, true, false, null, [], {}),
  fc.array(hostileString, { maxLength: 3 }),
  fc.dictionary(hostileString, hostileString, { maxKeys: 3 }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** Header values are bytes: Latin-1 without control characters (what an HTTP client can send at all). */
const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).filter((code) => code !== 0x7f).map((code) => String.fromCharCode(code)), maxLength: 60 }),
  fc.constantFrom('', 'ÿÿÿ', 'é', '\t', '%00', '%E0%A4%A', '()<>@,;:\\"/[]?={}'),
);

/** Now and then a header far over Node's 16 KiB limit for all headers together. */
const headerValueOrHuge: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: headerValue, weight: 30 },
  { arbitrary: fc.integer({ min: 1_000, max: 40_000 }).map((n) => 'h'.repeat(n)), weight: 1 },
);

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/merge-patch+json',
  'application/problem+json',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'application/octet-stream',
  'garbage',
  'application/json;;;=',
];

function bodyTemplate(route: ContractRoute): Record<string, unknown> | null {
  switch (route.name) {
    case 'auth.register':
    case 'auth.login':
      return { email: 'someone@example.com', password: 'long enough password' };
    case 'apiKeys.create':
      return { name: 'fuzz key', environment: 'test' };
    case 'resellerStores.create':
      return { name: 'Fuzz shop', platform: 'platform_a', shopDomain: 'fuzz-shop.example.com', accessToken: 'fuzz-token-value', webhookSecret: 'fuzz-secret-value' };
    case 'resellerStores.update':
      return { name: 'Renamed' };
    case 'sourceStores.create':
      return {
        name: 'Fuzz supplier',
        platform: 'custom',
        shopDomain: 'fuzz-supplier.example.com',
        accessToken: 'fuzz-token-value',
        webhookSecret: 'fuzz-secret-value',
        vendorTag: 'Fuzz vendor',
        pricingMode: 'field_rules',
        pricingConfig: { type: 'field_rules', rules: [{ field: 'price', op: 'multiply', value: 0.5 }, { field: 'sku', op: 'prefix', value: 'F-' }] },
      };
    case 'sourceStores.update':
      return { name: 'Renamed', pricingMode: 'percentage', pricingConfig: { type: 'percentage', value: 10 } };
    case 'webhookEndpoints.create':
      return { url: 'http://127.0.0.1:9/fuzz', enabledEvents: ['sync_job.dead'], description: 'fuzz' };
    case 'webhookEndpoints.update':
      return { description: 'Renamed', enabledEvents: ['*'], status: 'enabled' };
    case 'syncJobs.create':
      return { source_store_id: ids.sst, external_order_id: '4243' };
    case 'webhooks.orders':
      return sandbox.buildOrderPayload('platform_a', { id: 5151, lines: [{ sku: 'S', title: 'T', vendor: supplier.vendorTag, quantity: 1, price: '1.00' }] });
    case 'webhooks.fulfillments':
    case 'webhooks.fulfillmentsForStore':
      return { id: 1, order_id: 1, status: 'success', tracking_number: '1Z', tracking_numbers: ['1Z'], tracking_urls: [], line_items: [] };
    default:
      return route.hasBody ? {} : null;
  }
}

/**
 * Sets an own property, whatever its name: `body['__proto__'] = x` would set the prototype (or,
 * on a nested object, pollute Object.prototype of this very process, which runs the service).
 */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A valid body for the route with some of its fields replaced, dropped, or joined by strangers. */
function mutatedBody(route: ContractRoute): fc.Arbitrary<unknown> {
  const template = bodyTemplate(route) ?? {};
  const keys = Object.keys(template);
  const mutation = fc.oneof(
    fc.record({ kind: fc.constant('replace' as const), key: keys.length ? fc.constantFrom(...keys) : hostileString, value: wrongValue }),
    fc.record({ kind: fc.constant('drop' as const), key: keys.length ? fc.constantFrom(...keys) : hostileString, value: fc.constant(null) }),
    fc.record({ kind: fc.constant('add' as const), key: hostileString, value: wrongValue }),
    fc.record({ kind: fc.constant('nest' as const), key: keys.length ? fc.constantFrom(...keys) : hostileString, value: wrongValue }),
  );
  return fc.array(mutation, { minLength: 0, maxLength: 3 }).map((mutations) => {
    const body: Record<string, unknown> = structuredClone(template);
    for (const { kind, key, value: generated } of mutations) {
      // A copy: fast-check may hand the same value to several runs, which must not grow it.
      const value = structuredClone(generated);
      const inner = Object.hasOwn(body, key) ? body[key] : undefined;
      if (kind === 'drop') delete body[key];
      else if (kind === 'nest' && inner && typeof inner === 'object') setOwn(inner as Record<string, unknown>, typeof value === 'string' ? value.slice(0, 20) : 'nested', value);
      else setOwn(body, key, value);
    }
    return body;
  });
}

type Body = { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'raw'; bytes: Buffer };

function bodies(route: ContractRoute): fc.Arbitrary<Body> {
  const json = (value: fc.Arbitrary<unknown>) => value.map((v): Body => ({ kind: 'json', value: v }));
  const raw = (text: fc.Arbitrary<string | Uint8Array>) => text.map((t): Body => ({ kind: 'raw', bytes: Buffer.from(t) }));
  return fc.oneof(
    { arbitrary: fc.constant<Body>({ kind: 'none' }), weight: 2 },
    { arbitrary: json(mutatedBody(route)), weight: 8 },
    { arbitrary: json(fc.jsonValue({ maxDepth: 4 })), weight: 2 },
    { arbitrary: json(wrongValue), weight: 1 },
    {
      arbitrary: raw(fc.constantFrom('{', '{"a":', 'nul', '[1,2', '\u0000', '{"a":"\\ud800"}', '{"a":"\\u0000"}', '{"__proto__":{"admin":true}}', '{"a":1,"a":2}', '   ', '"just a string"', '1e999', '{"a":-}')),
      weight: 2,
    },
    { arbitrary: raw(fc.uint8Array({ maxLength: 300 })), weight: 1 },
    { arbitrary: raw(fc.integer({ min: 2_000, max: 500_000 }).map((n) => '['.repeat(n) + ']'.repeat(n))), weight: 1 },
    { arbitrary: raw(fc.integer({ min: 2_000, max: 30_000 }).map((n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n))), weight: 1 },
    { arbitrary: raw(fc.constantFrom(1024 * 1024 + 1, 3 * 1024 * 1024).map((n) => `{"name":"${'x'.repeat(n)}"}`)), weight: 1 },
  );
}

// Content encodings: the body compressed as its header says, or not, or cut short, or a bomb that
// inflates past 1 MiB; and encodings the service does not support.
const ENCODERS: Record<string, (bytes: Buffer) => Buffer> = { gzip: gzipSync, deflate: deflateSync, br: brotliCompressSync, zstd: zstdCompressSync };
const SUPPORTED_ENCODINGS = ['gzip', 'deflate', 'br', 'zstd', 'GZIP', 'Br'];
const UNSUPPORTED_ENCODINGS = ['compress', 'x-gzip', 'gzip, br', 'br;q=1', 'zstd, zstd', 'base64', 'chunked'];

interface Encoding {
  name: string;
  how: 'compressed' | 'plain' | 'truncated' | 'bomb';
}

const encodings: fc.Arbitrary<Encoding | null> = fc.oneof(
  { arbitrary: fc.constant(null), weight: 12 },
  {
    arbitrary: fc.record({
      name: fc.constantFrom(...SUPPORTED_ENCODINGS, ...UNSUPPORTED_ENCODINGS),
      how: fc.constantFrom<Encoding['how']>('compressed', 'compressed', 'plain', 'truncated', 'bomb'),
    }),
    weight: 4,
  },
);

const BOMB = Buffer.from(`{"name":"${'x'.repeat(3 * 1024 * 1024)}"}`);

/** The bytes sent for `bytes` under `encoding` (an unsupported encoding gets gzip bytes). */
function encode(bytes: Buffer, { name, how }: Encoding): Buffer {
  const compress = ENCODERS[name.toLowerCase()] ?? gzipSync;
  switch (how) {
    case 'compressed':
      return compress(bytes);
    case 'plain':
      return bytes;
    case 'truncated': {
      const compressed = compress(bytes);
      return compressed.subarray(0, Math.max(1, Math.floor(compressed.length / 2)));
    }
    case 'bomb':
      return compress(BOMB);
  }
}

function pathValue(param: string, route: ContractRoute): fc.Arbitrary<string> {
  const own =
    param === 'rst_id' ? ids.rst
    : param === 'delivery_id' ? ids.dlv
    : param === 'source_store_id' ? ids.sst
    : route.path.includes('source_stores') ? ids.sst
    : route.path.startsWith('/v1/sync_jobs') ? ids.job
    : route.path.startsWith('/v1/api_keys') ? ids.key
    : route.path.startsWith('/v1/webhook_endpoints') ? ids.we
    : route.path.startsWith('/v1/events') ? ids.evt
    : ids.rst;
  return fc.oneof(
    { arbitrary: fc.constant(own), weight: 2 },
    { arbitrary: hostileString.map(encodeComponent), weight: 5 },
    { arbitrary: fc.constantFrom('%', '%E0%A4%A', '%FF', '%00', '%C0%AF', 'a%2Fb', '%2e%2e', ';', '%25', '*', '$', `${own}%00`), weight: 2 },
    { arbitrary: fc.integer({ min: 65, max: 8_000 }).map((n) => `rst_${'a'.repeat(n)}`), weight: 1 },
  );
}

const QUERY_KEYS = ['limit', 'starting_after', 'ending_before', 'status', 'reseller_store_id', 'source_store_id', 'external_order_id', 'action', 'resource_id', 'type', 'created_after', 'created_before', 'event_id'];

const query: fc.Arbitrary<string> = fc.oneof(
  fc.constant(''),
  fc
    .array(fc.tuple(fc.oneof(fc.constantFrom(...QUERY_KEYS), hostileString), fc.oneof(hostileString, fc.integer().map(String), fc.constantFrom('0', '101', '-1', '1.5', '1e2', '0x10', ' 5 '))), { maxLength: 5 })
    .map((pairs) => `?${pairs.map(([k, v]) => `${encodeComponent(k)}=${encodeComponent(v)}`).join('&')}`),
  fc.constantFrom('?limit[]=1', '?limit[a]=b', '?status[$ne]=x', '?limit=1&limit=2', '?%ZZ=1', '?a=%E0%A4%A', '?starting_after=&ending_before=', `?limit=${'9'.repeat(500)}`, '?&&&=&'),
);

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Body;
  encoding: Encoding | null;
}

function requests(route: ContractRoute): fc.Arbitrary<FuzzRequest> {
  const params = fc.record(Object.fromEntries(route.params.map((param) => [param, pathValue(param, route)])) as Record<string, fc.Arbitrary<string>>);
  const credential = fc.oneof(
    fc.constant<string | null>(null),
    fc.constant(`Bearer ${user.token}`),
    fc.constant(`Bearer ${apiKey}`),
    fc.constant(`Bearer ${revokedKey}`),
    fc.constant(`bearer ${user.token}`),
    fc.constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', `Bearer ${user.token}x`, `Bearer ${user.token.split('.').slice(0, 2).join('.')}.`, 'Bearer sk_live_', 'Bearer sk_test_AAAA'),
    headerValueOrHuge.map((value) => `Bearer ${value}`),
    headerValue,
  );
  const webhook = route.auth === 'webhook';
  return fc
    .record({
      method: fc.oneof({ arbitrary: fc.constant(route.method), weight: 9 }, { arbitrary: fc.constantFrom(...METHODS), weight: 1 }),
      params,
      query,
      body: bodies(route),
      credential,
      contentType: fc.oneof({ arbitrary: fc.constant<string | null>('application/json'), weight: 6 }, { arbitrary: fc.constantFrom<string | null>(null, ...CONTENT_TYPES), weight: 3 }, { arbitrary: headerValue, weight: 1 }),
      extra: fc.dictionary(fc.constantFrom('x-request-id', 'accept', 'cookie', 'x-platform-topic', 'x-platform-webhook-id', 'x-forwarded-for', 'content-encoding', 'x-http-method-override', 'x-whatever'), headerValueOrHuge, { maxKeys: 3 }),
      signed: fc.oneof(fc.constant<'no' | 'valid' | 'forged'>('no'), fc.constantFrom<'no' | 'valid' | 'forged'>('valid', 'valid', 'forged')),
      domain: fc.oneof(fc.constant<string | null>(null), headerValue),
      encoding: encodings,
    })
    .map(({ method, params, query, body, credential, contentType, extra, signed, domain, encoding }) => {
      const headers: Record<string, string> = { ...extra };
      if (credential !== null) headers.authorization = credential;
      if (contentType !== null && body.kind !== 'none') headers['content-type'] = contentType;
      const bytes = body.kind === 'json' ? Buffer.from(JSON.stringify(body.value) ?? 'null') : body.kind === 'raw' ? body.bytes : Buffer.alloc(0);
      if (webhook) {
        const [shop, secret] = route.name === 'webhooks.orders' ? [reseller.shopDomain, reseller.webhookSecret] : [supplier.shopDomain, supplier.webhookSecret];
        // The signature covers the body as decoded.
        if (signed !== 'no') headers['x-platform-hmac-sha256'] = signPayload(bytes, signed === 'valid' ? secret : `${secret}-forged`);
        headers['x-platform-shop-domain'] = domain ?? shop;
        if (!('x-platform-topic' in headers)) headers['x-platform-topic'] = route.name === 'webhooks.orders' ? 'orders/create' : 'fulfillments/create';
      }
      delete headers['content-encoding'];
      if (encoding && body.kind !== 'none') {
        headers['content-encoding'] = encoding.name;
        return { method, path: `${fillPath(route.path, params)}${query}`, headers, body: { kind: 'raw', bytes: encode(bytes, encoding) } as Body, encoding };
      }
      return { method, path: `${fillPath(route.path, params)}${query}`, headers, body, encoding: null };
    });
}

// ---------------------------------------------------------------------------------------------
// What must come back

async function send(request: FuzzRequest): Promise<ChaosResponse> {
  const rawBody = request.body.kind === 'json' ? (JSON.stringify(request.body.value) ?? 'null') : request.body.kind === 'raw' ? request.body.bytes : undefined;
  const hasBody = rawBody !== undefined && !['GET', 'HEAD'].includes(request.method);
  try {
    return await client.request(request.method, request.path, { headers: request.headers, timeoutMs: 10_000, ...(hasBody && { rawBody }) });
  } catch (error) {
    throw new Error(`no answer (${String((error as Error).cause ?? error)}) to ${describeRequest(request)}`);
  }
}

function describeRequest(request: FuzzRequest): string {
  const body = request.body.kind === 'json' ? JSON.stringify(request.body.value) : request.body.kind === 'raw' ? request.body.bytes.toString('utf8') : '';
  const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, v.length > 80 ? `${v.slice(0, 80)}… (${v.length})` : v]));
  return `${request.method} ${request.path.slice(0, 200)} ${JSON.stringify(headers)} ${body.length > 300 ? `${body.slice(0, 300)}… (${body.length} bytes)` : body}`;
}

/** Never a 5xx; every error is the envelope, carrying the request id of its header. */
function expectWellFormed(response: ChaosResponse, request: FuzzRequest): void {
  const what = `${describeRequest(request)}\n→ ${response.status} ${response.text.slice(0, 300)}`;
  expect(response.status, what).toBeLessThan(500);
  if (response.status < 400) return;
  const body = response.body as { error?: Record<string, unknown>; request_id?: unknown } | undefined;
  expect(body, what).toBeTypeOf('object');
  expect(Object.keys(body!).sort(), what).toEqual(['error', 'request_id']);
  expect(body!.error, what).toBeTypeOf('object');
  for (const key of Object.keys(body!.error!)) expect(ERROR_FIELDS, what).toContain(key);
  expect(body!.error!.code, what).toBeTypeOf('string');
  expect(body!.error!.message, what).toBeTypeOf('string');
  if ('param' in body!.error!) expect(body!.error!.param, what).toBeTypeOf('string');
  expect(body!.request_id, what).toBeTypeOf('string');
  expect(response.headers.get('x-request-id'), what).toBe(body!.request_id);
  expect(response.headers.get('content-type') ?? '', what).toMatch(/^application\/json/);
}

/** The route's contract declares the status (only for requests with the route's own method: others are other routes). */
function expectDeclared(response: ChaosResponse, request: FuzzRequest, route: ContractRoute): void {
  if (request.method !== route.method) return;
  const declared = Object.keys(route.route.responses).map(Number);
  expect(declared, `${route.name} answered the undeclared ${response.status} to ${describeRequest(request)}\n→ ${response.text.slice(0, 300)}`).toContain(response.status);
}

/** What an encoded body must get, whatever else is wrong with the request: the encoding is looked at first. */
function expectEncodingHandled(response: ChaosResponse, request: FuzzRequest): void {
  const { encoding } = request;
  if (!encoding || request.method === 'GET') return;
  const what = `${describeRequest(request)}\n→ ${response.status} ${response.text.slice(0, 300)}`;
  const sentBytes = request.body.kind === 'raw' && request.body.bytes.length > 0;
  if (!sentBytes) return;
  // Refused before its body was read: headers over 16 KiB, a NUL in the path or query; or no
  // route at all (another method or path), where nothing reads a body.
  const param = (response.body as { error?: { param?: string } } | undefined)?.error?.param;
  if (response.status === 400 && param !== undefined && param !== 'body') return;
  if (response.status === 404) return;
  if (UNSUPPORTED_ENCODINGS.includes(encoding.name)) expect(response.status, what).toBe(415);
  else if (encoding.how === 'bomb') expect([413, 415], what).toContain(response.status);
  // Bytes sent as they are, or cut short, that happen to be a whole valid stream are an ordinary
  // request (brotli has no header: "5e-324" is an empty body, and so is the one byte ";"); the
  // others cannot be decoded.
  else if (encoding.how !== 'compressed' && request.body.kind === 'raw' && decodes(encoding.name, request.body.bytes)) return;
  // A truncated stream may inflate past the 1 MiB limit before its end is reached: 413 then.
  else if (encoding.how === 'truncated') expect([400, 413, 415], what).toContain(response.status);
  else if (encoding.how !== 'compressed') expect([400, 415], what).toContain(response.status);
}

const DECODERS: Record<string, (bytes: Buffer) => Buffer> = { gzip: gunzipSync, deflate: inflateSync, br: brotliDecompressSync, zstd: zstdDecompressSync };

function decodes(encoding: string, bytes: Buffer): boolean {
  try {
    DECODERS[encoding.toLowerCase()]!(bytes);
    return true;
  } catch {
    return false;
  }
}

/** Bytes straight onto a socket, for requests no HTTP client would send; resolves with all the server wrote. */
function rawExchange(request: string): Promise<string> {
  const { port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.end(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
  });
}

const routes = contractRoutes();
const statusesSeen = new Map<string, Set<number>>();

describe('hostile requests to every route of the contract', () => {
  it('covers every route', () => {
    expect(routes.length).toBeGreaterThanOrEqual(25);
    expect(routes.map((route) => route.name)).toEqual(expect.arrayContaining(['webhooks.orders', 'webhooks.fulfillments', 'syncJobs.retry', 'auth.register']));
  });

  it.each(routes.map((route) => [`${route.method} ${route.path}`, route] as const))('%s: never a 5xx, always the error envelope', async (_label, route) => {
    const seen = new Set<number>();
    statusesSeen.set(route.name, seen);
    await fc.assert(
      fc.asyncProperty(requests(route), async (request) => {
        const response = await send(request);
        seen.add(response.status);
        expectWellFormed(response, request);
        expectDeclared(response, request, route);
        expectEncodingHandled(response, request);
      }),
      { numRuns: RUNS_PER_ROUTE, ...REPLAY },
    );
    // The fuzzing reached past the front door at least sometimes.
    expect([...seen].some((status) => status !== 401 && status !== 404), `${route.name} saw only ${[...seen]}`).toBe(true);
  });

  it.each([
    ['a header with a control character', 'GET /v1/auth/me HTTP/1.1\r\nHost: x\r\nX-Evil: a\u0001b\r\n\r\n'],
    ['a malformed request line', 'GET /v1/auth/me HTTP/9.9 extra\r\nHost: x\r\n\r\n'],
    ['headers over 16 KiB', `GET /v1/auth/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`],
    ['a bare LF and an obsolete line fold', 'POST /v1/auth/login HTTP/1.1\nHost: x\r\nContent-Type: application/json\r\n folded\r\nContent-Length: 2\r\n\r\n{}'],
    ['no Host header', 'GET /v1/auth/me HTTP/1.1\r\nConnection: close\r\n\r\n'],
    ['no Host header on a webhook', 'POST /v1/orders/webhook HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}'],
  ])('answers a request the HTTP parser refuses (%s) with the error envelope', async (_label, raw) => {
    const answer = await rawExchange(raw);
    const [head, body = ''] = answer.split('\r\n\r\n');
    expect(head, answer.slice(0, 300)).toMatch(/^HTTP\/1\.1 400 /);
    const parsed = JSON.parse(body);
    expect(parsed.error.code).toBe('validation_failed');
    expect(head).toContain(`X-Request-Id: ${parsed.request_id}`);
    ledger.response(`raw: ${_label}`, 400, {}, answer);
  });

  it('is still healthy and ready afterwards', async () => {
    await waitFor(async () => (await client.get('/readyz')).status === 200, 10_000, 'ready');
    const me = await client.get('/v1/auth/me', { token: user.token });
    expect(me.status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------
// Orders in every currency, with big numbers

const EXPONENTS = new Map(iso4217.map(({ code, digits }) => [code, digits]));

/** A decimal amount with `decimals` digits after the point (none when 0). */
const decimalText = (minor: bigint, decimals: number) => {
  const digits = minor.toString().padStart(decimals + 1, '0');
  return decimals === 0 ? digits : `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
};

interface OrderCase {
  currency: string;
  quantity: number;
  price: string | number;
  /** null when the order is valid; else the field it must be refused for. */
  refusedFor: 'price' | 'quantity' | null;
  vendor: 'unit' | 'total';
}

const bigQuantity = fc.constantFrom(1e300, 1e21, 2 ** 53 + 2, 2 ** 53, MAX_QUANTITY + 1, 0, -1, 1.5, Number.MAX_VALUE);
const validQuantity = fc.oneof(fc.integer({ min: 1, max: 20 }), fc.constantFrom(MAX_QUANTITY, MAX_QUANTITY - 1, 1000));

const orderCases: fc.Arbitrary<OrderCase> = fc
  .record({
    currency: fc.constantFrom(...EXPONENTS.keys()),
    quantity: fc.oneof({ arbitrary: validQuantity, weight: 4 }, { arbitrary: bigQuantity, weight: 1 }),
    minor: fc.oneof({ arbitrary: fc.bigInt({ min: 0n, max: 100_000n }), weight: 3 }, { arbitrary: fc.bigInt({ min: 0n, max: BigInt(MAX_AMOUNT_MINOR) * 2n }), weight: 1 }),
    priceForm: fc.constantFrom('exact', 'exact', 'exact', 'one decimal too many', 'huge', 'exponent', 'number'),
    vendor: fc.constantFrom<'unit' | 'total'>('unit', 'total'),
  })
  .map(({ currency, quantity, minor, priceForm, vendor }): OrderCase => {
    const decimals = EXPONENTS.get(currency)!;
    const quantityOk = Number.isInteger(quantity) && quantity >= 1 && quantity <= MAX_QUANTITY;
    const amountOk = minor <= BigInt(MAX_AMOUNT_MINOR) && (!quantityOk || minor * BigInt(quantity) <= BigInt(MAX_AMOUNT_MINOR));
    // The first field the adapter reads decides the error: quantity (schema), then the price, then the line total.
    const refusal = (priceOk: boolean) => (!quantityOk ? 'quantity' : !priceOk ? 'price' : !amountOk ? (minor > BigInt(MAX_AMOUNT_MINOR) ? 'price' : 'quantity') : null);
    switch (priceForm) {
      case 'exact':
        return { currency, quantity, price: decimalText(minor, decimals), refusedFor: refusal(true), vendor };
      case 'one decimal too many':
        return { currency, quantity, price: `${decimalText(minor, decimals)}${decimals === 0 ? '.' : ''}7`, refusedFor: refusal(false), vendor };
      case 'huge':
        return { currency, quantity, price: '9'.repeat(40), refusedFor: refusal(false), vendor };
      case 'exponent':
        return { currency, quantity, price: '8e+3', refusedFor: refusal(false), vendor };
      case 'number':
        // platform_a sends prices as strings only.
        return { currency, quantity, price: Number(decimalText(minor, decimals)), refusedFor: refusal(false), vendor };
    }
    throw new Error(priceForm);
  });

describe('orders in every ISO 4217 currency, with big numbers', () => {
  let shop: ResellerFixture;
  let bySupplier: Record<'unit' | 'total', SupplierFixture>;
  let nextOrderId = 900_000;
  const routed: OrderCase[] = [];

  beforeAll(async () => {
    // Its own stores: the fuzzing above may have deleted the shared ones.
    const owner = await registerUser(client);
    shop = await createReseller(client, owner.token);
    bySupplier = {
      unit: await createSupplier(client, owner.token, shop.id, { platform: 'custom' }),
      total: await createSupplier(client, owner.token, shop.id, { platform: 'platform_b', pricingConfig: { type: 'percentage', value: 0 } }),
    };
  });

  it('routes every valid order and refuses every other as a whole, 400 naming the field', async () => {
    await fc.assert(
      fc.asyncProperty(orderCases, async (order) => {
        const id = nextOrderId++;
        const payload = sandbox.buildOrderPayload('platform_a', { id, currency: order.currency, lines: [{ sku: 'S', title: 'T', vendor: bySupplier[order.vendor].vendorTag, quantity: 1, price: '0' }] });
        Object.assign((payload.line_items as Record<string, unknown>[])[0]!, { quantity: order.quantity, price: order.price });
        const bytes = Buffer.from(JSON.stringify(payload));
        const response = await client.request('POST', '/v1/orders/webhook', {
          rawBody: bytes,
          headers: {
            'content-type': 'application/json',
            'x-platform-hmac-sha256': signPayload(bytes, shop.webhookSecret),
            'x-platform-shop-domain': shop.shopDomain,
            'x-platform-topic': 'orders/create',
          },
        });
        const what = `${JSON.stringify(order)} → ${response.status} ${response.text.slice(0, 300)}`;
        if (order.refusedFor === null) {
          expect(response.status, what).toBe(200);
          expect(response.body.syncJobIds, what).toHaveLength(1);
          routed.push(order);
        } else {
          expect(response.status, what).toBe(400);
          expect(response.body.error.code, what).toBe('validation_failed');
          expect(response.body.error.param, what).toBe(`line_items.0.${order.refusedFor}`);
        }
      }),
      { numRuns: RUNS_PER_ROUTE * 4, ...REPLAY },
    );
    // Enough of both kinds to mean something (about a third are valid).
    expect(routed.length).toBeGreaterThan(RUNS_PER_ROUTE / 2);
  });

  it('sends suppliers only exact amounts and quantities, in the minor units of the order\'s currency', async () => {
    const placed = () => [...sandbox.ordersFor(bySupplier.unit.shopDomain), ...sandbox.ordersFor(bySupplier.total.shopDomain)];
    await waitFor(async () => placed().length >= routed.length, 120_000, 'every routed order placed');
    for (const { body } of placed()) {
      const order = body as { currency: string; lines?: { quantity: number; unitPrice: string }[]; line_items?: { quantity: number; total: string }[] };
      const decimals = EXPONENTS.get(order.currency)!;
      const amount = decimals === 0 ? /^\d+$/ : new RegExp(`^\\d+\\.\\d{${decimals}}$`);
      for (const line of [...(order.lines ?? []), ...(order.line_items ?? [])]) {
        expect(Number.isSafeInteger(line.quantity) && line.quantity >= 1 && line.quantity <= MAX_QUANTITY, JSON.stringify(order)).toBe(true);
        const text = 'unitPrice' in line ? line.unitPrice : line.total;
        expect(text, JSON.stringify(order)).toMatch(amount);
        expect(BigInt(text.replace('.', '')) <= BigInt(MAX_AMOUNT_MINOR), JSON.stringify(order)).toBe(true);
      }
    }
  });
});

itLeaksNoSecret();
