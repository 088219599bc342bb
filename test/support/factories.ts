import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { ApiClient } from './api.ts';
import { recordSecret } from './leaks.ts';

const unique = () => randomBytes(4).toString('hex');

export interface TestUser {
  token: string;
  email: string;
  password: string;
  cookie: string;
}

/** Registers a user through the API and returns its access token and refresh cookie. */
export async function registerUser(api: ApiClient): Promise<TestUser> {
  const email = `user-${unique()}@example.com`;
  const password = `pw-${unique()}-long`;
  recordSecret('password', password);
  const response = await api.post('/v1/auth/register', { body: { email, password } });
  expect(response.status).toBe(201);
  const cookie = response.headers.get('set-cookie')!.split(';')[0]!;
  return { token: response.body.accessToken, email, password, cookie };
}

export async function createResellerStore(api: ApiClient, token: string, overrides: Record<string, unknown> = {}) {
  const body = {
    name: 'Reseller shop',
    platform: 'platform_a',
    shopDomain: `reseller-${unique()}.example.com`,
    accessToken: `shpat_${unique()}${unique()}`,
    webhookSecret: `whsec_${unique()}${unique()}`,
    ...overrides,
  };
  recordStoreSecrets('reseller store', body);
  const response = await api.post('/v1/reseller_stores', { token, body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

export async function createSourceStore(api: ApiClient, token: string, resellerStoreId: string, overrides: Record<string, unknown> = {}) {
  const body = {
    name: 'Supplier',
    platform: 'custom',
    shopDomain: `supplier-${unique()}.example.com`,
    accessToken: `sup_${unique()}${unique()}`,
    webhookSecret: `whsec_${unique()}${unique()}`,
    vendorTag: `Vendor ${unique()}`,
    pricingMode: 'percentage',
    pricingConfig: { type: 'percentage', value: 25 },
    ...overrides,
  };
  recordStoreSecrets('source store', body);
  const response = await api.post(`/v1/reseller_stores/${resellerStoreId}/source_stores`, { token, body });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

/** Creates an API key through the API; returns it with its raw key (shown only once). */
export async function createApiKey(api: ApiClient, token: string, overrides: Record<string, unknown> = {}) {
  const response = await api.post('/v1/api_keys', { token, body: { name: `key ${unique()}`, environment: 'test', ...overrides } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  recordSecret('raw API key', response.body.raw_key);
  return response.body;
}

function recordStoreSecrets(what: string, body: Record<string, unknown>): void {
  recordSecret(`${what} access token`, body.accessToken);
  recordSecret(`${what} webhook secret`, body.webhookSecret);
}
