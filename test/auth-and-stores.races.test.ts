/**
 * Races on credentials and stores (found by a review): a refresh token family revoked while a
 * refresh rotates it, concurrent source store PATCHes, a source store created while its reseller
 * store is deleted. Each runs many trials, since each race is lost in most but not all of them.
 */
import { describe, expect } from 'vitest';
import type { ApiClient, ApiResponse } from './support/api.ts';
import { expectError } from './support/assertions.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';

// Many auth calls from one IP in these tests.
it.override('serviceEnv', { AUTH_RATE_LIMIT_PER_MINUTE: '100000' });

function refreshPairOf(response: ApiResponse): string | undefined {
  return response.headers.getSetCookie().find((line) => line.startsWith('refresh_token='))?.split(';')[0];
}
const refresh = (api: ApiClient, cookie: string) => api.post('/v1/auth/refresh', { headers: { cookie } });
const login = async (api: ApiClient, user: TestUser) => {
  const response = await api.post('/v1/auth/login', { body: { email: user.email, password: user.password } });
  expect(response.status).toBe(200);
  return refreshPairOf(response)!;
};

describe('refresh token families', () => {
  it('a refresh that lost a race revokes the whole family, including the winner\'s new token', async ({ api }) => {
    const user = await registerUser(api);
    const survivors: string[] = [];
    for (let trial = 0; trial < 30; trial++) {
      const cookie = await login(api, user);
      const results = await Promise.all([refresh(api, cookie), refresh(api, cookie)]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 401]);
      const winner = refreshPairOf(results.find((r) => r.status === 200)!)!;
      // The loser presented a rotated token: the family is revoked, the winner's new token with it.
      const next = await refresh(api, winner);
      if (next.status !== 401) survivors.push(`trial ${trial}: ${next.status}`);
    }
    expect(survivors).toEqual([]);
  });

  it('logout racing a refresh leaves no live token in the family', async ({ api }) => {
    const user = await registerUser(api);
    const survivors: string[] = [];
    for (let trial = 0; trial < 30; trial++) {
      const cookie = await login(api, user);
      const [rotated, out] = await Promise.all([refresh(api, cookie), api.post('/v1/auth/logout', { headers: { cookie } })]);
      expect(out.status).toBe(204);
      if (rotated.status !== 200) continue;
      const next = await refresh(api, refreshPairOf(rotated)!);
      if (next.status !== 401) survivors.push(`trial ${trial}: ${next.status}`);
    }
    expect(survivors).toEqual([]);
  });
});

describe('source store PATCH', () => {
  it('concurrent PATCHes never leave pricingMode and pricingConfig.type disagreeing', async ({ api }) => {
    const user = await registerUser(api);
    const reseller = await createResellerStore(api, user.token);
    const source = await createSourceStore(api, user.token, reseller.id);
    const path = `/v1/reseller_stores/${reseller.id}/source_stores/${source.id}`;
    const mismatches: string[] = [];
    for (let trial = 0; trial < 30; trial++) {
      const reset = await api.patch(path, { token: user.token, body: { pricingMode: 'percentage', pricingConfig: { type: 'percentage', value: 10 + trial } } });
      expect(reset.status).toBe(200);
      // A switches the mode (with a config of the new type); B changes only the percentage, valid for the mode it read.
      const [a, b] = await Promise.all([
        api.patch(path, { token: user.token, body: { pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules: [] } } }),
        api.patch(path, { token: user.token, body: { pricingConfig: { type: 'percentage', value: 50 + trial } } }),
      ]);
      // B is refused (400) when it reads the store after A switched the mode: that is fine.
      expect(a.status).toBe(200);
      expect([200, 400]).toContain(b.status);
      const now = (await api.get(path, { token: user.token })).body;
      if (now.pricingConfig.type !== now.pricingMode) mismatches.push(`trial ${trial}: mode ${now.pricingMode}, config ${JSON.stringify(now.pricingConfig)}`);
    }
    expect(mismatches).toEqual([]);
  });
});

describe('reseller store DELETE and source store creation', () => {
  it('a source store created while its reseller store is deleted is never left active under the deleted store', async ({ api }) => {
    const user = await registerUser(api);
    const orphans: string[] = [];
    for (let trial = 0; trial < 25; trial++) {
      const reseller = await createResellerStore(api, user.token);
      const [removed, created] = await Promise.all([
        api.delete(`/v1/reseller_stores/${reseller.id}`, { token: user.token }),
        api.post(`/v1/reseller_stores/${reseller.id}/source_stores`, {
          token: user.token,
          body: {
            name: 'Supplier', platform: 'custom', shopDomain: `supplier-${trial}-${Date.now()}.example.com`,
            accessToken: 'sup_token_value', webhookSecret: 'whsec_value', vendorTag: `Vendor ${trial}`,
            pricingMode: 'percentage', pricingConfig: { type: 'percentage', value: 10 },
          },
        }),
      ]);
      expect(removed.status).toBe(204);
      expect([201, 404]).toContain(created.status);
      if (created.status !== 201) continue;
      const source = await api.get(`/v1/reseller_stores/${reseller.id}/source_stores/${created.body.id}`, { token: user.token });
      if (source.body.deletedAt === null) orphans.push(`trial ${trial}: ${created.body.id} active under deleted ${reseller.id}`);
    }
    expect(orphans).toEqual([]);
  });
});
