/**
 * API answers are never stored by a browser or proxy cache (RFC 9111 `no-store`): they carry access
 * tokens, secrets shown once (an API key's, a webhook endpoint's) and the caller's own data.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { test as it } from './support/fixtures.ts';

it('every /v1 answer says Cache-Control: no-store: a session, a secret shown once, a list, an error', async ({ api }) => {
  const session = await api.post('/v1/auth/register', { body: { email: `no-store-${randomBytes(4).toString('hex')}@example.com`, password: 'correct horse battery' } });
  expect(session.status).toBe(201);
  const token = session.body.accessToken as string;
  const key = await api.post('/v1/api_keys', { token, body: { name: 'ci', environment: 'test' } });
  expect(key.status, JSON.stringify(key.body)).toBe(201);
  const list = await api.get('/v1/reseller_stores', { token });
  expect(list.status).toBe(200);
  const missing = await api.get('/v1/sync_jobs/job_missing', { token });
  expect(missing.status).toBe(404);
  for (const response of [session, key, list, missing]) expect(response.headers.get('cache-control')).toBe('no-store');
});
