import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import argon2 from 'argon2';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import type { ApiClient, ApiResponse } from './support/api.ts';
import { expectError, ISO_UTC, withoutRequestId } from './support/assertions.ts';
import { queryRows } from './support/database.ts';
import { registerUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';
import { startTestService, type TestService } from './support/service.ts';

const JWT_SECRET = randomBytes(32).toString('hex');
const ISSUER = 'order-routing-service';
const AUDIENCE = 'order-routing-api';

// The file's user (fixture `user`) serves tests that only need someone registered: argon2 makes
// every registration cost.
it.override('serviceEnv', { JWT_SECRET });

const unique = () => randomBytes(4).toString('hex');
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** The `refresh_token` Set-Cookie header of a response, parsed. */
function refreshCookieOf(response: ApiResponse) {
  const header = response.headers.getSetCookie().find((line) => line.startsWith('refresh_token='));
  expect(header, 'a refresh_token Set-Cookie header').toBeDefined();
  const [pair, ...attributes] = header!.split(';').map((part) => part.trim());
  const attrs = new Map(attributes.map((attribute) => {
    const [name, ...value] = attribute.split('=');
    return [name!.toLowerCase(), value.join('=')];
  }));
  return { pair: pair!, value: pair!.slice('refresh_token='.length), attrs };
}

const refresh = (api: ApiClient, cookie?: string) =>
  api.post('/v1/auth/refresh', cookie ? { headers: { cookie } } : {});
const me = (api: ApiClient, token: string) => api.get('/v1/auth/me', { token });

function expectSession(response: ApiResponse, status: number) {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(Object.keys(response.body).sort()).toEqual(['accessToken', 'expiresAt', 'request_id', 'tokenType']);
  expect(response.body.tokenType).toBe('Bearer');
  expect(response.body.accessToken.split('.')).toHaveLength(3);
  // Unix seconds (not milliseconds, not an ISO string), 15 minutes after the token was issued.
  expect(Number.isInteger(response.body.expiresAt)).toBe(true);
  const claims = JSON.parse(Buffer.from(response.body.accessToken.split('.')[1], 'base64url').toString());
  expect(claims.exp).toBe(response.body.expiresAt);
  expect(claims.exp - claims.iat).toBe(15 * 60);
  expect(Math.abs(claims.iat - nowSeconds())).toBeLessThanOrEqual(60);
}

describe('POST /v1/auth/register', () => {
  it('creates a user, returns an access token and sets the refresh cookie', async ({ service, api }) => {
    const email = `new-${unique()}@example.com`;
    const response = await api.post('/v1/auth/register', { body: { email, password: 'correct horse battery' } });
    expectSession(response, 201);

    const cookie = refreshCookieOf(response);
    expect(cookie.value.length).toBeGreaterThanOrEqual(32);
    expect(cookie.attrs.has('httponly')).toBe(true);
    expect(cookie.attrs.get('samesite')?.toLowerCase()).toBe('strict');
    expect(cookie.attrs.get('path')).toBe('/v1/auth');
    const expires = Date.parse(cookie.attrs.get('expires')!);
    expect(expires).toBeGreaterThan(Date.now() + 29 * 24 * 3600 * 1000);

    const current = await me(api, response.body.accessToken);
    expect(current.status).toBe(200);
    expect(current.body.email).toBe(email);

    // argon2id; neither the password nor the refresh token is stored as such.
    const [row] = await queryRows<{ password_hash: string }>(service.databaseUrl, 'select password_hash from users where id = $1', [current.body.id]);
    expect(row!.password_hash).toMatch(/^\$argon2id\$/);
    expect(row!.password_hash).not.toContain('correct horse battery');
    const tokens = await queryRows(service.databaseUrl, 'select * from refresh_tokens where user_id = $1', [current.body.id]);
    expect(tokens).toHaveLength(1);
    expect(JSON.stringify(tokens)).not.toContain(cookie.value);
  });

  it('marks the refresh cookie Secure when not on loopback', async ({ service }) => {
    const response = await new Promise<{ status: number; cookies: string[] }>((resolve, reject) => {
      const body = JSON.stringify({ email: `remote-${unique()}@example.com`, password: 'long enough password' });
      const req = httpRequest(
        new URL('/v1/auth/register', service.url),
        { method: 'POST', headers: { host: 'api.example.com', 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, cookies: res.headers['set-cookie'] ?? [] }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(response.status).toBe(201);
    const cookie = response.cookies.find((line) => line.startsWith('refresh_token='));
    expect(cookie).toMatch(/;\s*Secure/i);
    expect(cookie).toMatch(/;\s*HttpOnly/i);
  });

  it('registers an email once even when two registrations race', async ({ api }) => {
    const email = `race-${unique()}@example.com`;
    const results = await Promise.all(
      [1, 2].map(() => api.post('/v1/auth/register', { body: { email, password: 'long enough password' } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    for (const conflict of results.filter((r) => r.status === 409)) expect(conflict.body.error.details).toEqual({ reason: 'email_taken' });
  });

  it('treats emails case-insensitively: stored lower-cased, login and conflicts ignore case', async ({ api }) => {
    const local = `Mixed-${unique()}`;
    const password = 'a long enough password';
    const created = await api.post('/v1/auth/register', { body: { email: `${local}@Example.COM`, password } });
    expect(created.status).toBe(201);
    const current = await me(api, created.body.accessToken);
    expect(current.body.email).toBe(`${local.toLowerCase()}@example.com`);

    const login = await api.post('/v1/auth/login', { body: { email: `${local.toUpperCase()}@EXAMPLE.com`, password } });
    expectSession(login, 200);
    expect((await me(api, login.body.accessToken)).body.id).toBe(current.body.id);

    const again = await api.post('/v1/auth/register', {
      body: { email: `${local.toLowerCase()}@example.com`, password: 'another password' },
    });
    expectError(again, 409, 'conflict', 'email');
    expect(again.body.error.details).toEqual({ reason: 'email_taken' });
    expect(again.headers.getSetCookie()).toEqual([]);
  });

  it.for([
    ['7 characters', 'x'.repeat(7), 400],
    ['8 characters', 'x'.repeat(8), 201],
    ['256 characters', 'x'.repeat(256), 201],
    ['257 characters', 'x'.repeat(257), 400],
  ] as const)('password of %s answers %i', async ([_label, password, status], { api }) => {
    const response = await api.post('/v1/auth/register', { body: { email: `len-${unique()}@example.com`, password } });
    if (status === 201) expectSession(response, 201);
    else expectError(response, 400, 'validation_failed', 'password');
  });

  it.for([
    ['a missing email', { password: 'long enough password' }, 'email'],
    ['an invalid email', { email: 'not-an-email', password: 'long enough password' }, 'email'],
    ['a missing password', { email: 'someone@example.com' }, 'password'],
    ['a non-string password', { email: 'someone@example.com', password: 12345678 }, 'password'],
  ] as const)('rejects %s with 400 naming the field', async ([_label, body, param], { api }) => {
    expectError(await api.post('/v1/auth/register', { body }), 400, 'validation_failed', param);
  });
});

describe('POST /v1/auth/login', () => {
  it('logs in with the right password', async ({ api, user }) => {
    const response = await api.post('/v1/auth/login', { body: { email: user.email, password: user.password } });
    expectSession(response, 200);
    expect(refreshCookieOf(response).value).not.toBe(user.cookie.split('=')[1]);
    expect((await me(api, response.body.accessToken)).body.email).toBe(user.email);
  });

  it('replaces a password hash made with older argon2 parameters at the next login, which keeps working', async ({ service, api }) => {
    const user = await registerUser(api);
    const older = await argon2.hash(user.password, { type: argon2.argon2id }); // the library defaults: 64 MiB, 3 passes, 4 lanes
    await queryRows(service.databaseUrl, 'update users set password_hash = $1 where email = $2', [older, user.email]);

    const login = await api.post('/v1/auth/login', { body: { email: user.email, password: user.password } });
    expectSession(login, 200);
    const [row] = await queryRows<{ password_hash: string }>(service.databaseUrl, 'select password_hash from users where email = $1', [user.email]);
    expect(row!.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
    expect(await argon2.verify(row!.password_hash, user.password)).toBe(true);
    expectSession(await api.post('/v1/auth/login', { body: { email: user.email, password: user.password } }), 200);
  });

  it('answers a wrong password and an unknown email identically', async ({ api, user }) => {
    const wrongPassword = await api.post('/v1/auth/login', { body: { email: user.email, password: 'wrong password!' } });
    const unknownEmail = await api.post('/v1/auth/login', {
      body: { email: `nobody-${unique()}@example.com`, password: user.password },
    });
    expectError(wrongPassword, 401, 'invalid_credentials');
    expectError(unknownEmail, 401, 'invalid_credentials');
    expect(withoutRequestId(wrongPassword.body)).toEqual(withoutRequestId(unknownEmail.body));
    expect(wrongPassword.body.request_id).not.toBe(unknownEmail.body.request_id);
    expect(wrongPassword.headers.getSetCookie()).toEqual([]);
    expect(unknownEmail.headers.getSetCookie()).toEqual([]);
  });
});

describe('GET /v1/auth/me', () => {
  it('returns the current user', async ({ api, user }) => {
    const response = await me(api, user.token);
    expect(response.status).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual(['createdAt', 'email', 'id', 'request_id']);
    expect(response.body.id).toMatch(/^usr_[0-9a-f]{32}$/);
    expect(response.body.email).toBe(user.email);
    expect(response.body.createdAt).toMatch(ISO_UTC);
  });

  it.for([
    ['no Authorization header', {}],
    ['an empty bearer', { authorization: 'Bearer ' }],
    ['a Basic credential', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
    ['a garbage token', { authorization: 'Bearer not-a-jwt' }],
    ['an unknown API key', { authorization: `Bearer sk_live_${randomBytes(32).toString('base64url')}` }],
  ] as const)('answers 401 unauthorized for %s', async ([_label, headers], { api }) => {
    expectError(await api.get('/v1/auth/me', { headers }), 401, 'unauthorized');
  });
});

describe('POST /v1/auth/refresh', () => {
  it('rotates the refresh cookie; the new cookie works', async ({ api }) => {
    const user = await registerUser(api);
    const first = await refresh(api, user.cookie);
    expectSession(first, 200);
    const rotated = refreshCookieOf(first);
    expect(rotated.pair).not.toBe(user.cookie);
    expect(rotated.attrs.has('httponly')).toBe(true);
    expect(rotated.attrs.get('path')).toBe('/v1/auth');
    expect((await me(api, first.body.accessToken)).body.email).toBe(user.email);

    const second = await refresh(api, rotated.pair);
    expectSession(second, 200);
    expect(refreshCookieOf(second).pair).not.toBe(rotated.pair);
  });

  it('detects reuse of a rotated cookie and revokes the whole family', async ({ api }) => {
    const user = await registerUser(api);
    const rotated = refreshCookieOf(await refresh(api, user.cookie));

    const replay = await refresh(api, user.cookie);
    expectError(replay, 401, 'unauthorized');
    expect(replay.headers.getSetCookie().some((line) => line.startsWith('refresh_token=') && !line.startsWith('refresh_token=;'))).toBe(false);

    // The legitimate holder's newer cookie is part of the revoked family.
    expectError(await refresh(api, rotated.pair), 401, 'unauthorized');

    // Other sessions of the same user are other families and keep working.
    const login = await api.post('/v1/auth/login', { body: { email: user.email, password: user.password } });
    expectSession(await refresh(api, refreshCookieOf(login).pair), 200);
  });

  it('answers 401 for an expired refresh token', async ({ service, api }) => {
    const user = await registerUser(api);
    const userId = (await me(api, user.token)).body.id;
    await queryRows(service.databaseUrl, `update refresh_tokens set expires_at = now() - interval '1 second' where user_id = $1`, [userId]);
    expectError(await refresh(api, user.cookie), 401, 'unauthorized');
  });

  it('lets exactly one of two concurrent refreshes with the same cookie win', async ({ api }) => {
    const user = await registerUser(api);
    const results = await Promise.all([refresh(api, user.cookie), refresh(api, user.cookie)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 401]);
  });

  it.for([
    ['no cookie', undefined],
    ['an unknown cookie', `refresh_token=${randomBytes(32).toString('base64url')}`],
    ['an empty cookie', 'refresh_token='],
  ] as const)('answers 401 for %s', async ([_label, cookie], { api }) => {
    expectError(await refresh(api, cookie), 401, 'unauthorized');
  });
});

describe('POST /v1/auth/logout', () => {
  it('revokes the session and clears the cookie', async ({ api }) => {
    const user = await registerUser(api);
    const other = await api.post('/v1/auth/login', { body: { email: user.email, password: user.password } });
    const otherCookie = refreshCookieOf(other).pair;

    const response = await api.post('/v1/auth/logout', { headers: { cookie: user.cookie } });
    expect(response.status).toBe(204);
    expect(response.body).toBeUndefined();
    expect(response.headers.get('x-request-id')).toBeTruthy();
    const cleared = refreshCookieOf(response);
    expect(cleared.value).toBe('');
    expect(cleared.attrs.get('path')).toBe('/v1/auth');
    expect(Date.parse(cleared.attrs.get('expires')!)).toBeLessThan(Date.now());

    expectError(await refresh(api, user.cookie), 401, 'unauthorized');
    // Logging out one session leaves the user's other sessions alone.
    expectSession(await refresh(api, otherCookie), 200);
  });

  it('answers 204 without a cookie, still clearing it', async ({ api }) => {
    const response = await api.post('/v1/auth/logout');
    expect(response.status).toBe(204);
    expect(refreshCookieOf(response).value).toBe('');
  });
});

describe('access tokens', () => {
  const key = new TextEncoder().encode(JWT_SECRET);
  const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

  async function sign(userId: string, options: { secret?: Uint8Array; exp?: number; alg?: string; iss?: string; aud?: string } = {}) {
    const iat = nowSeconds() - 60;
    return new SignJWT({})
      .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT' })
      .setSubject(userId)
      .setIssuer(options.iss ?? ISSUER)
      .setAudience(options.aud ?? AUDIENCE)
      .setIssuedAt(iat)
      .setExpirationTime(options.exp ?? iat + 900)
      .sign(options.secret ?? key);
  }

  it('accepts a token signed like the service signs (so the rejections below are meaningful)', async ({ api, user }) => {
    const userId = (await me(api, user.token)).body.id;
    const response = await me(api, await sign(userId));
    expect(response.status).toBe(200);
    expect(response.body.id).toBe(userId);
  });

  it('rejects expired, tampered, unsigned and foreign tokens with 401 unauthorized', async ({ api, user }) => {
    const victim = await registerUser(api);
    const userId = (await me(api, user.token)).body.id;
    const victimId = (await me(api, victim.token)).body.id;

    const [header, payload, signature] = user.token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const tampered = `${header}.${b64({ ...claims, sub: victimId })}.${signature}`;
    const unsigned = `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, sub: victimId })}.`;
    const flippedSignature = `${header}.${payload}.${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;

    const tokens: Record<string, string> = {
      expired: await sign(userId, { exp: nowSeconds() - 10 }),
      tampered,
      unsigned,
      flippedSignature,
      wrongSecret: await sign(userId, { secret: new TextEncoder().encode(randomBytes(32).toString('hex')) }),
      otherAlgorithm: await sign(userId, { alg: 'HS512' }),
      wrongIssuer: await sign(userId, { iss: 'someone-else' }),
      wrongAudience: await sign(userId, { aud: 'someone-else' }),
    };
    for (const [label, token] of Object.entries(tokens)) {
      const response = await me(api, token);
      expect(response.status, label).toBe(401);
      expectError(response, 401, 'unauthorized');
    }
  });
});

describe('rate limiting', () => {
  let limited: TestService;
  beforeAll(async () => {
    limited = await startTestService({ AUTH_RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(() => limited?.stop());

  it('answers the 4th auth call in a minute with 429 rate_limited and Retry-After', async () => {
    const user = await registerUser(limited.api); // 1
    const body = { email: user.email, password: 'not the password' };
    expect((await limited.api.post('/v1/auth/login', { body })).status).toBe(401); // 2
    expect((await limited.api.post('/v1/auth/login', { body })).status).toBe(401); // 3

    const blocked = await limited.api.post('/v1/auth/login', { body: { email: user.email, password: user.password } });
    expectError(blocked, 429, 'rate_limited');
    const retryAfter = Number(blocked.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);

    expectError(await limited.api.post('/v1/auth/register', { body: { email: `x-${unique()}@example.com`, password: 'long enough' } }), 429, 'rate_limited');
    expectError(await limited.api.post('/v1/auth/refresh', { headers: { cookie: user.cookie } }), 429, 'rate_limited');

    // Authenticated API calls are not limited by the auth limiter.
    expect((await limited.api.get('/v1/auth/me', { token: user.token })).status).toBe(200);
  });
});
