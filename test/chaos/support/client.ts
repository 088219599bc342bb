/**
 * HTTP to the service for the chaos suite: every response is recorded in the ledger, every secret a
 * successful creation hands over is registered there, and nothing is assumed about the answer (a
 * body that is not JSON is kept as text, so fuzzing can assert on it instead of crashing on it).
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { ledger } from './ledger.ts';

export interface ChaosResponse<T = any> {
  status: number;
  /** Parsed JSON, or undefined when the body is empty or not JSON. */
  body: T;
  text: string;
  headers: Headers;
  /** Wall time from sending to the whole body read. */
  ms: number;
}

export interface ChaosRequest {
  token?: string | undefined;
  body?: unknown;
  /** Sent as-is instead of JSON-encoding `body`. */
  rawBody?: string | Buffer | Uint8Array;
  headers?: Record<string, string>;
  /** Abort (and throw) after this long; default 20 s. */
  timeoutMs?: number;
}

const CREATIONS: { method: string; path: RegExp; fields: [field: string, kind: 'password' | 'store access token' | 'webhook secret'][] }[] = [
  { method: 'POST', path: /^\/v1\/auth\/register$/i, fields: [['password', 'password']] },
  { method: 'POST', path: /^\/v1\/reseller_stores$/i, fields: [['accessToken', 'store access token'], ['webhookSecret', 'webhook secret']] },
  {
    method: 'POST',
    path: /^\/v1\/reseller_stores\/[^/]+\/source_stores$/i,
    fields: [['accessToken', 'store access token'], ['webhookSecret', 'webhook secret']],
  },
];

export class ChaosClient {
  constructor(public baseUrl: string) {}

  async request<T = any>(method: string, path: string, options: ChaosRequest = {}): Promise<ChaosResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    let body: string | Uint8Array | undefined;
    if (options.rawBody !== undefined) body = typeof options.rawBody === 'string' ? options.rawBody : new Uint8Array(options.rawBody);
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
    }
    const started = performance.now();
    const response = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      body,
      signal: AbortSignal.timeout(options.timeoutMs ?? 20_000),
    });
    const text = await response.text();
    const ms = performance.now() - started;
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    const allowed: string[] = [];
    const rawKey = (parsed as { raw_key?: unknown } | undefined)?.raw_key;
    if (response.status === 201 && typeof rawKey === 'string') {
      // Its own creation response is the one place a raw key may appear.
      ledger.secret('raw API key', rawKey);
      allowed.push(rawKey);
    }
    const signingSecret = (parsed as { secret?: unknown } | undefined)?.secret;
    if (response.status >= 200 && response.status < 300 && typeof signingSecret === 'string' && signingSecret.startsWith('whsec_')) {
      // Shown by an endpoint's creation and its rotation, and never again.
      ledger.secret('webhook endpoint signing secret', signingSecret);
      allowed.push(signingSecret);
    }
    if (response.status >= 200 && response.status < 300) this.registerCreatedSecrets(method, path, options.body);
    ledger.response(`${method} ${path.slice(0, 200)}`, response.status, response.headers, text, allowed);
    return { status: response.status, body: parsed as T, text, headers: response.headers, ms };
  }

  private registerCreatedSecrets(method: string, path: string, body: unknown): void {
    if (typeof body !== 'object' || body === null) return;
    const pathname = path.split('?')[0]!;
    for (const creation of CREATIONS) {
      if (creation.method !== method.toUpperCase() || !creation.path.test(pathname)) continue;
      for (const [field, kind] of creation.fields) ledger.secret(kind, (body as Record<string, unknown>)[field]);
    }
  }

  get = <T = any>(path: string, options?: ChaosRequest) => this.request<T>('GET', path, options);
  post = <T = any>(path: string, options?: ChaosRequest) => this.request<T>('POST', path, options);
  patch = <T = any>(path: string, options?: ChaosRequest) => this.request<T>('PATCH', path, options);
  delete = <T = any>(path: string, options?: ChaosRequest) => this.request<T>('DELETE', path, options);
}

export const unique = (bytes = 6) => randomBytes(bytes).toString('hex');

export interface ChaosUser {
  email: string;
  password: string;
  token: string;
}

export async function registerUser(client: ChaosClient): Promise<ChaosUser> {
  const email = `chaos-${unique()}@example.com`;
  const password = `pw-${unique(12)}`;
  const response = await client.post('/v1/auth/register', { body: { email, password } });
  expect(response.status, response.text).toBe(201);
  return { email, password, token: response.body.accessToken };
}

export interface StoreSecrets {
  accessToken: string;
  webhookSecret: string;
}

export interface ResellerFixture extends StoreSecrets {
  id: string;
  shopDomain: string;
  platform: string;
}

export interface SupplierFixture extends StoreSecrets {
  id: string;
  shopDomain: string;
  platform: string;
  vendorTag: string;
}

export async function createReseller(client: ChaosClient, token: string, overrides: Record<string, unknown> = {}): Promise<ResellerFixture> {
  const body = {
    name: 'Chaos shop',
    platform: 'platform_a',
    shopDomain: `chaos-shop-${unique()}.example.com`,
    accessToken: `shpat_${unique(16)}`,
    webhookSecret: `whsec_${unique(16)}`,
    ...overrides,
  };
  const response = await client.post('/v1/reseller_stores', { token, body });
  expect(response.status, response.text).toBe(201);
  return { id: response.body.id, shopDomain: response.body.shopDomain, platform: response.body.platform, accessToken: body.accessToken, webhookSecret: body.webhookSecret };
}

export async function createSupplier(
  client: ChaosClient,
  token: string,
  resellerStoreId: string,
  overrides: Record<string, unknown> = {},
): Promise<SupplierFixture> {
  const body = {
    name: 'Chaos supplier',
    platform: 'custom',
    shopDomain: `chaos-supplier-${unique()}.example.com`,
    accessToken: `sup_${unique(16)}`,
    webhookSecret: `whsec_${unique(16)}`,
    vendorTag: `Vendor ${unique()}`,
    pricingMode: 'percentage',
    pricingConfig: { type: 'percentage', value: 25 },
    ...overrides,
  };
  const response = await client.post(`/v1/reseller_stores/${resellerStoreId}/source_stores`, { token, body });
  expect(response.status, response.text).toBe(201);
  return {
    id: response.body.id,
    shopDomain: response.body.shopDomain,
    platform: response.body.platform,
    vendorTag: response.body.vendorTag,
    accessToken: body.accessToken,
    webhookSecret: body.webhookSecret,
  };
}

export async function createApiKey(client: ChaosClient, token: string, environment: 'live' | 'test' = 'test'): Promise<{ id: string; rawKey: string }> {
  const response = await client.post('/v1/api_keys', { token, body: { name: `chaos key ${unique(3)}`, environment } });
  expect(response.status, response.text).toBe(201);
  return { id: response.body.id, rawKey: response.body.raw_key };
}
