import { randomBytes } from 'node:crypto';
import { describe, expect } from 'vitest';
import { SecretBox } from '../src/shared/secrets.ts';
import type { ApiResponse } from './support/api.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';

const ENCRYPTION_KEY = randomBytes(32).toString('base64');
/** `v1.<iv: 12 bytes>.<tag: 16 bytes>.<ciphertext>`, base64url parts. */
const SEALED = /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/;

/** Every plaintext secret this file sent to the service. */
const secrets: string[] = [];
/** Every response body this file received. */
const bodies: { label: string; text: string }[] = [];

const secret = (label: string) => {
  const value = `${label}-${randomBytes(12).toString('hex')}`;
  secrets.push(value);
  return value;
};

function keep(label: string, response: ApiResponse): ApiResponse {
  bodies.push({ label, text: response.body === undefined ? '' : JSON.stringify(response.body) });
  return response;
}

it.override('serviceEnv', { ENCRYPTION_KEY });
it.beforeAll(({ user }) => {
  secrets.push(user.password);
});

function expectNoSecretIn(text: string, where: string) {
  for (const value of secrets) expect(text, `${where} contains a secret`).not.toContain(value);
  expect(text, where).not.toMatch(/"(accessToken|webhookSecret)(Encrypted)?"\s*:/);
  expect(text, where).not.toMatch(/"v1\.[A-Za-z0-9_-]{16}\./);
}

describe('store credentials', () => {
  let rst: { id: string };
  let source: { id: string };
  const plain = { rstToken: '', rstSecret: '', sstToken: '', sstSecret: '' };

  it.beforeAll(async ({ api, user }) => {
    plain.rstToken = secret('rst-token');
    plain.rstSecret = secret('rst-secret');
    plain.sstToken = secret('sst-token');
    plain.sstSecret = secret('sst-secret');
    const t = user.token;
    const created = keep(
      'create reseller store',
      await api.post('/v1/reseller_stores', {
        token: t,
        body: {
          name: 'Secret shop',
          platform: 'platform_a',
          shopDomain: `secret-${randomBytes(4).toString('hex')}.example.com`,
          accessToken: plain.rstToken,
          webhookSecret: plain.rstSecret,
        },
      }),
    );
    expect(created.status).toBe(201);
    rst = created.body;
    const sourceCreated = keep(
      'create source store',
      await api.post(`/v1/reseller_stores/${rst.id}/source_stores`, {
        token: t,
        body: {
          name: 'Secret supplier',
          platform: 'platform_b',
          shopDomain: `secret-supplier-${randomBytes(4).toString('hex')}.example.com`,
          accessToken: plain.sstToken,
          webhookSecret: plain.sstSecret,
          vendorTag: 'Secretive',
          pricingMode: 'percentage',
          pricingConfig: { type: 'percentage', value: 10 },
        },
      }),
    );
    expect(sourceCreated.status).toBe(201);
    source = sourceCreated.body;
    const sourcePath = `/v1/reseller_stores/${rst.id}/source_stores/${source.id}`;

    keep('get reseller store', await api.get(`/v1/reseller_stores/${rst.id}`, { token: t }));
    keep('list reseller stores', await api.get('/v1/reseller_stores', { token: t }));
    keep('patch reseller store', await api.patch(`/v1/reseller_stores/${rst.id}`, { token: t, body: { name: 'Renamed' } }));
    keep('get source store', await api.get(sourcePath, { token: t }));
    keep('list source stores', await api.get(`/v1/reseller_stores/${rst.id}/source_stores`, { token: t }));
    keep('patch source store', await api.patch(sourcePath, { token: t, body: { name: 'Renamed', pricingConfig: { type: 'percentage', value: 11 } } }));
    keep('audit log', await api.get('/v1/audit_log?limit=100', { token: t }));
    // Errors that echo nothing of what was sent: a rejected patch of a credential, a conflict.
    keep('patch credential', await api.patch(`/v1/reseller_stores/${rst.id}`, { token: t, body: { accessToken: plain.rstToken } }));
    keep('patch source credential', await api.patch(sourcePath, { token: t, body: { webhookSecret: plain.sstSecret } }));
    const clash = await api.post(`/v1/reseller_stores/${rst.id}/source_stores`, {
      token: t,
      body: {
        name: 'Clash',
        platform: 'custom',
        shopDomain: 'clash.example.com',
        accessToken: plain.sstToken,
        webhookSecret: plain.sstSecret,
        vendorTag: 'secretive',
        pricingMode: 'percentage',
        pricingConfig: { type: 'percentage', value: 10 },
      },
    });
    expect(clash.status).toBe(409);
    keep('vendor tag conflict', clash);
    const invalid = await api.post('/v1/reseller_stores', {
      token: t,
      body: { name: 'Bad', platform: 'nope', shopDomain: 'bad.example.com', accessToken: plain.rstToken, webhookSecret: plain.rstSecret },
    });
    expect(invalid.status).toBe(400);
    keep('validation error', invalid);
    keep('delete source store', await api.delete(sourcePath, { token: t }));
    keep('get deleted source store', await api.get(sourcePath, { token: t }));
    keep('delete reseller store', await api.delete(`/v1/reseller_stores/${rst.id}`, { token: t }));
    keep('get deleted reseller store', await api.get(`/v1/reseller_stores/${rst.id}`, { token: t }));
  });

  it('never appear in any response body', () => {
    expect(bodies.length).toBeGreaterThanOrEqual(15);
    for (const { label, text } of bodies) expectNoSecretIn(text, label);
  });

  it('are stored as AES-256-GCM blobs bound to their row, never in plaintext', async ({ service }) => {
    const box = new SecretBox(Buffer.from(ENCRYPTION_KEY, 'base64'));
    const rows = [
      ...(await queryRows(service.databaseUrl, 'select * from reseller_stores where id = $1', [rst.id])).map((row) => ({
        row,
        token: plain.rstToken,
        secret: plain.rstSecret,
      })),
      ...(await queryRows(service.databaseUrl, 'select * from source_stores where id = $1', [source.id])).map((row) => ({
        row,
        token: plain.sstToken,
        secret: plain.sstSecret,
      })),
    ];
    expect(rows).toHaveLength(2);
    for (const { row, token, secret: webhookSecret } of rows) {
      const id = row.id as string;
      const sealedToken = row.access_token_encrypted as string;
      const sealedSecret = row.webhook_secret_encrypted as string;
      for (const [sealed, value] of [
        [sealedToken, token],
        [sealedSecret, webhookSecret],
      ] as const) {
        expect(sealed).toMatch(SEALED);
        expect(sealed).not.toBe(value);
        expect(sealed).not.toContain(value);
        expect(sealed).not.toContain(Buffer.from(value).toString('base64url'));
        expect(box.decrypt(sealed, id)).toBe(value);
        // Bound to its row: the same blob does not open for another id.
        expect(() => box.decrypt(sealed, `${id}x`)).toThrow();
      }
      expect(sealedToken).not.toBe(sealedSecret);
      const text = JSON.stringify(row);
      expect(text).not.toContain(token);
      expect(text).not.toContain(webhookSecret);
    }
  });

  it('encrypt the same value differently each time (random IV)', async ({ service, api, user }) => {
    const value = secret('same');
    const a = await createResellerStore(api, user.token, { accessToken: value, webhookSecret: value });
    const b = await createResellerStore(api, user.token, { accessToken: value, webhookSecret: value });
    const rows = await queryRows<{ access_token_encrypted: string; webhook_secret_encrypted: string }>(
      service.databaseUrl,
      'select access_token_encrypted, webhook_secret_encrypted from reseller_stores where id = any($1)',
      [[a.id, b.id]],
    );
    const blobs = rows.flatMap((row) => [row.access_token_encrypted, row.webhook_secret_encrypted]);
    expect(new Set(blobs).size).toBe(4);
  });

  it('appear nowhere else in the database (audit metadata included)', async ({ service }) => {
    const [dump] = await queryRows<{ t: string }>(
      service.databaseUrl,
      `select concat_ws(' ',
         (select string_agg(a::text, ' ') from audit_entries a),
         (select string_agg(u::text, ' ') from users u),
         (select string_agg(k::text, ' ') from api_keys k),
         (select string_agg(r::text, ' ') from refresh_tokens r)) as t`,
    );
    for (const value of secrets) expect(dump!.t).not.toContain(value);
  });
});

describe('logs', () => {
  it('never contain store credentials, passwords, raw API keys, access or refresh tokens', async ({ service, api, user }) => {
    const t = user.token;
    const wrongPassword = secret('wrong-password');
    const login = await api.post('/v1/auth/login', { body: { email: user.email, password: wrongPassword } });
    expect(login.status).toBe(401);
    const second = await registerUser(api);
    secrets.push(second.password, second.token, second.cookie.split('=')[1]!, user.token, user.cookie.split('=')[1]!);
    const refreshed = await api.post('/v1/auth/refresh', { headers: { cookie: second.cookie } });
    expect(refreshed.status).toBe(200);
    secrets.push(refreshed.body.accessToken);

    const key = await api.post('/v1/api_keys', { token: t, body: { name: 'logged?', environment: 'live' } });
    secrets.push(key.body.raw_key);
    expect((await api.get('/v1/reseller_stores', { token: key.body.raw_key })).status).toBe(200);
    const bogusKey = secret('sk_live_bogus');
    expect((await api.get('/v1/reseller_stores', { token: bogusKey })).status).toBe(401);
    expect((await api.delete(`/v1/api_keys/${key.body.id}`, { token: t })).status).toBe(204);
    expect((await api.get('/v1/reseller_stores', { token: key.body.raw_key })).status).toBe(401);
    // A request the service cannot parse, carrying a secret.
    const broken = await api.post('/v1/reseller_stores', {
      token: t,
      rawBody: `{"accessToken": "${secret('broken-json')}",`,
      headers: { 'content-type': 'application/json' },
    });
    expect(broken.status).toBe(400);

    // The logs are really captured, with a line per request (so the absence below means something).
    expect(service.logs.length).toBeGreaterThan(20);
    const all = service.logs.join('\n');
    expect(all).toContain('/v1/reseller_stores');
    expect(all).toContain('/v1/auth/login');
    for (const value of secrets) expect(all, 'a secret was logged').not.toContain(value);
    expect(all).not.toMatch(/"v1\.[A-Za-z0-9_-]{16}\./);
  });
});
