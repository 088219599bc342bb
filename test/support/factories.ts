import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { ApiClient } from './api.ts';

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
  const response = await api.post('/v1/auth/register', { body: { email, password } });
  expect(response.status).toBe(201);
  const cookie = response.headers.get('set-cookie')!.split(';')[0]!;
  return { token: response.body.accessToken, email, password, cookie };
}

export async function createResellerStore(api: ApiClient, token: string, overrides: Record<string, unknown> = {}) {
  const response = await api.post('/v1/reseller_stores', {
    token,
    body: {
      name: 'Reseller shop',
      platform: 'platform_a',
      shopDomain: `reseller-${unique()}.example.com`,
      accessToken: `shpat_${unique()}${unique()}`,
      webhookSecret: `whsec_${unique()}${unique()}`,
      ...overrides,
    },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

export async function createSourceStore(api: ApiClient, token: string, resellerStoreId: string, overrides: Record<string, unknown> = {}) {
  const response = await api.post(`/v1/reseller_stores/${resellerStoreId}/source_stores`, {
    token,
    body: {
      name: 'Supplier',
      platform: 'custom',
      shopDomain: `supplier-${unique()}.example.com`,
      accessToken: `sup_${unique()}${unique()}`,
      webhookSecret: `whsec_${unique()}${unique()}`,
      vendorTag: `Vendor ${unique()}`,
      pricingMode: 'percentage',
      pricingConfig: { type: 'percentage', value: 25 },
      ...overrides,
    },
  });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}
