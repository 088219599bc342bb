import { createServer, request as httpRequest } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { describe, expect } from 'vitest';
import type { ApiResponse } from './support/api.ts';
import { expectError, expectErrorEnvelope } from './support/assertions.ts';
import { createResellerStore, type TestUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { answerClientError } from '../src/http/client-error.ts';
import { createLogger } from '../src/shared/logger.ts';

const GENERATED_ID = /^req_[0-9a-f]{32}$/;
const storeBody = () => ({
  name: 'Shop',
  platform: 'custom',
  shopDomain: `http-${Math.random().toString(36).slice(2)}.example.com`,
  accessToken: 'token',
  webhookSecret: 'secret',
});

const it = test
  /** A reseller store of the file's user. */
  .extend('storeId', { scope: 'file' }, async ({ api, user }) => (await createResellerStore(api, user.token)).id as string)
  /** Sends bytes exactly as given to the service (fetch would refuse or rewrite some of these requests). */
  .extend('rawRequest', { scope: 'file' }, ({ service }) => (method: string, path: string, headers: Record<string, string | number>, body?: Buffer | string) =>
    new Promise<ApiResponse>((resolve, reject) => {
      const url = new URL(path, service.url);
      const req = httpRequest(url, { method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
          resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined, headers: responseHeaders });
        });
      });
      req.on('error', reject);
      req.end(body);
    }))
  /** POSTs `body` with the given Content-Encoding, as the file's user unless `token` names someone. */
  .extend('postEncoded', { scope: 'file' }, ({ user, rawRequest }) => (path: string, body: Buffer, encoding: string, token: string | undefined = user.token) =>
    rawRequest('POST', path, { 'content-type': 'application/json', 'content-encoding': encoding, 'content-length': body.length, ...(token && { authorization: `Bearer ${token}` }) }, body));

describe('request ids', () => {
  it('every response carries X-Request-Id, and every body request_id equal to it', async ({ api, user, storeId }) => {
    const responses: [string, ApiResponse][] = [
      ['healthz', await api.get('/healthz')],
      ['readyz', await api.get('/readyz')],
      ['me', await api.get('/v1/auth/me', { token: user.token })],
      ['list', await api.get('/v1/reseller_stores', { token: user.token })],
      ['get', await api.get(`/v1/reseller_stores/${storeId}`, { token: user.token })],
      ['create', await api.post('/v1/reseller_stores', { token: user.token, body: storeBody() })],
      ['400', await api.post('/v1/reseller_stores', { token: user.token, body: {} })],
      ['401', await api.get('/v1/reseller_stores')],
      ['404 route', await api.get('/v1/nothing-here')],
      ['404 id', await api.get('/v1/reseller_stores/rst_missing', { token: user.token })],
      ['415', await api.post('/v1/reseller_stores', { token: user.token, rawBody: 'x', headers: { 'content-type': 'text/plain' } })],
    ];
    const ids = new Set<string>();
    for (const [label, response] of responses) {
      const header = response.headers.get('x-request-id');
      expect(header, label).toMatch(GENERATED_ID);
      expect(response.body.request_id, label).toBe(header);
      ids.add(header!);
    }
    expect(ids.size).toBe(responses.length);

    const deleted = await api.delete(`/v1/reseller_stores/${responses[5]![1].body.id}`, { token: user.token });
    expect(deleted.status).toBe(204);
    expect(deleted.headers.get('x-request-id')).toMatch(GENERATED_ID);
  });

  it.for([
    ['a simple id', 'my-trace-123'],
    ['a 128-character id', 'a'.repeat(128)],
    ['an id with punctuation', 'abc:DEF/123_~!#$%^&*()+=[]{}|;<>?,.@'],
  ] as const)('keeps a caller\'s printable X-Request-Id: %s', async ([_label, given], { api, user }) => {
    const ok = await api.get('/v1/auth/me', { token: user.token, headers: { 'x-request-id': given } });
    expect(ok.headers.get('x-request-id')).toBe(given);
    expect(ok.body.request_id).toBe(given);
    const error = await api.get('/v1/reseller_stores/rst_missing', { token: user.token, headers: { 'x-request-id': given } });
    expect(error.headers.get('x-request-id')).toBe(given);
    expect(error.body.request_id).toBe(given);
  });

  it.for([
    ['one over 128 characters', 'a'.repeat(129)],
    ['one with a space', 'two words'],
    ['one with a tab', 'tab\there'],
    ['one with non-ASCII bytes', 'caf\u00e9'],
  ] as const)('replaces an unacceptable X-Request-Id: %s', async ([_label, given], { user, rawRequest }) => {
    const response = await rawRequest('GET', '/v1/auth/me', { authorization: `Bearer ${user.token}`, 'x-request-id': given });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toMatch(GENERATED_ID);
    expect(response.body.request_id).toBe(response.headers.get('x-request-id'));
  });
});

/** Bytes straight onto a socket (requests no HTTP client sends); resolves with all the server wrote. */
function rawExchange(port: number, request: string, { end = true } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => (end ? socket.end(request) : socket.write(request)));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
  });
}

/** The status line, the headers (lower-cased names) and the parsed body of a raw answer. */
function parseAnswer(answer: string) {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = new Headers(lines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()] as [string, string]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: body ? JSON.parse(body) : undefined };
}

describe('answers Node\'s HTTP server would make on its own', () => {
  const port = (service: { url: string }) => Number(new URL(service.url).port);

  it('answers an HTTP/1.1 request without a Host header with the error envelope and X-Request-Id', async ({ service }) => {
    for (const request of ['GET /healthz HTTP/1.1\r\n\r\n', 'POST /v1/auth/login HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}']) {
      const answer = parseAnswer(await rawExchange(port(service), request));
      expectError(answer, 400, 'validation_failed', 'headers');
      expect(answer.body.error.message).toMatch(/Host/);
    }
  });

  it('still serves HTTP/1.0 without a Host header, which it does not require', async ({ service }) => {
    const answer = parseAnswer(await rawExchange(port(service), 'GET /healthz HTTP/1.0\r\n\r\n'));
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-request-id')).toMatch(GENERATED_ID);
  });

  it('serves a request with an Expect it does not know instead of a bare 417', async ({ service }) => {
    const answer = parseAnswer(await rawExchange(port(service), 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nConnection: close\r\n\r\n'));
    expect(answer.status).toBe(200);
    expect(answer.body.request_id).toBe(answer.headers.get('x-request-id'));
  });

  it('answers a request whose headers never complete in time with the error envelope, not a bare 408', async () => {
    const server = createServer({ headersTimeout: 300, requestTimeout: 400, connectionsCheckingInterval: 50 }, () => {});
    server.on('clientError', answerClientError(createLogger('silent')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const answer = parseAnswer(await rawExchange((server.address() as AddressInfo).port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', { end: false }));
      expectError(answer, 400, 'validation_failed', 'headers');
    } finally {
      server.close();
    }
  });
});

describe('request bodies', () => {
  it('answers 413 payload_too_large for a body over 1 MiB', async ({ user, rawRequest }) => {
    const big = JSON.stringify({ ...storeBody(), name: 'x'.repeat(1024 * 1024) });
    const response = await rawRequest(
      'POST',
      '/v1/reseller_stores',
      { 'content-type': 'application/json', 'content-length': Buffer.byteLength(big), authorization: `Bearer ${user.token}` },
      big,
    );
    expectError(response, 413, 'payload_too_large');
  });

  it('answers 413 for an oversized chunked body too', async ({ user, rawRequest }) => {
    const big = JSON.stringify({ ...storeBody(), name: 'x'.repeat(1024 * 1024 + 10) });
    const response = await rawRequest(
      'POST',
      '/v1/reseller_stores',
      { 'content-type': 'application/json', 'transfer-encoding': 'chunked', authorization: `Bearer ${user.token}` },
      big,
    );
    expectError(response, 413, 'payload_too_large');
  });

  it('accepts a body just under 1 MiB as far as size goes (then validates it)', async ({ api, user }) => {
    const body = JSON.stringify({ ...storeBody(), name: 'x'.repeat(1000 * 1024) });
    const response = await api.post('/v1/reseller_stores', { token: user.token, rawBody: body, headers: { 'content-type': 'application/json' } });
    expectError(response, 400, 'validation_failed', 'name');
  });

  it.for([
    ['text/plain', 'text/plain', 'hello'],
    ['a form', 'application/x-www-form-urlencoded', 'name=Shop&platform=custom'],
    ['multipart', 'multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n'],
    ['XML', 'application/xml', '<store/>'],
  ] as const)('answers 415 unsupported_media_type for %s', async ([_label, contentType, rawBody], { api, user }) => {
    const response = await api.post('/v1/reseller_stores', { token: user.token, rawBody, headers: { 'content-type': contentType } });
    expectError(response, 415, 'unsupported_media_type');
  });

  it('answers 415 for a body without a content type', async ({ user, rawRequest }) => {
    const response = await rawRequest('POST', '/v1/reseller_stores', { authorization: `Bearer ${user.token}`, 'content-length': 2 }, '{}');
    expectError(response, 415, 'unsupported_media_type');
  });

  it('answers 415 for JSON in a charset other than UTF-8', async ({ api, user }) => {
    const response = await api.post('/v1/reseller_stores', {
      token: user.token,
      rawBody: JSON.stringify(storeBody()),
      headers: { 'content-type': 'application/json; charset=iso-8859-1' },
    });
    expectError(response, 415, 'unsupported_media_type');
  });

  it('accepts application/json with charset=utf-8', async ({ api, user }) => {
    const response = await api.post('/v1/reseller_stores', {
      token: user.token,
      rawBody: JSON.stringify(storeBody()),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(response.status).toBe(201);
  });

  it.for([
    ['truncated JSON', '{"name": "Shop",'],
    ['a bare word', 'hello'],
    ['a JSON string', '"just a string"'],
    ['a JSON number', '42'],
    ['null', 'null'],
    ['an empty object with trailing garbage', '{}}'],
  ] as const)('answers 400 (never 500) for %s', async ([_label, rawBody], { api, user }) => {
    for (const path of ['/v1/reseller_stores', '/v1/auth/register', '/v1/auth/login', '/v1/api_keys']) {
      const response = await api.post(path, { token: user.token, rawBody, headers: { 'content-type': 'application/json' } });
      expectError(response, 400, 'validation_failed');
    }
  });

  it('answers 400 for a PATCH with malformed JSON', async ({ api, user, storeId }) => {
    const response = await api.patch(`/v1/reseller_stores/${storeId}`, {
      token: user.token,
      rawBody: '{"name":',
      headers: { 'content-type': 'application/json' },
    });
    expectError(response, 400, 'validation_failed', 'body');
  });
});

describe('content encodings', () => {
  const errorsLogged = (service: { logs: string[] }) => service.logs.filter((line) => JSON.parse(line).level >= 50);

  it.for([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
    ['zstd', zstdCompressSync],
    ['GZIP', gzipSync],
  ] as const)('accepts a body compressed with %s', async ([encoding, compress], { postEncoded: post }) => {
    const response = await post('/v1/reseller_stores', compress(Buffer.from(JSON.stringify(storeBody()))), encoding);
    expect(response.status, JSON.stringify(response.body)).toBe(201);
  });

  it.for([
    ['gzip', 'bytes that are no gzip', Buffer.from('{"name":"not compressed at all"}')],
    ['gzip', 'a truncated gzip stream', gzipSync(Buffer.from(JSON.stringify(storeBody()))).subarray(0, 20)],
    ['deflate', 'bytes that are no deflate stream', Buffer.from('plain text')],
    ['br', 'bytes that are no brotli stream', Buffer.from('\u00ff\u00fe garbage \u0000\u0001')],
    ['br', 'JSON that was not compressed', Buffer.from(JSON.stringify({ id: 1, order_id: 1, status: 'success', tracking_numbers: ['1Z'] }))],
    ['zstd', 'bytes that are no zstd frame', Buffer.from('garbage')],
  ] as const)('answers 400 validation_failed, never 500, for content-encoding %s with %s', async ([encoding, _label, body], { service, user, storeId, postEncoded: post }) => {
    const before = errorsLogged(service).length;
    for (const [path, token] of [['/v1/reseller_stores', user.token], ['/v1/auth/login', undefined], [`/v1/reseller_stores/${storeId}/source_stores`, user.token]] as const) {
      expectError(await post(path, body, encoding, token), 400, 'validation_failed', 'body');
    }
    expectError(await post('/v1/orders/webhook', body, encoding, undefined), 400, 'validation_failed', 'body');
    // Nothing worth an error log line (the 500 used to log a stack trace).
    expect(errorsLogged(service).slice(before)).toEqual([]);
  });

  it.for(['compress', 'gzip, br', 'x-gzip2', 'identity, gzip'])('answers 415 for the content-encoding %j it does not support', async (encoding, { postEncoded: post }) => {
    const response = await post('/v1/reseller_stores', gzipSync(Buffer.from(JSON.stringify(storeBody()))), encoding);
    expectError(response, 415, 'unsupported_media_type');
    expect(response.body.error.message).toMatch(/Content-Encoding/);
  });

  it('counts the decompressed size against the 1 MiB limit: a small gzip that inflates past it is 413', async ({ postEncoded: post }) => {
    const bomb = gzipSync(Buffer.from(JSON.stringify({ ...storeBody(), name: 'x'.repeat(16 * 1024 * 1024) })));
    expect(bomb.length).toBeLessThan(64 * 1024);
    expectError(await post('/v1/reseller_stores', bomb, 'gzip'), 413, 'payload_too_large');
    expectError(await post('/v1/orders/webhook', bomb, 'gzip', undefined), 413, 'payload_too_large');
  });
});

describe('text the database cannot store', () => {
  const json = (user: TestUser, text: string) => ({ token: user.token, rawBody: text, headers: { 'content-type': 'application/json' } });
  const storeJson = (name: string) => `{"name":"${name}","platform":"custom","shopDomain":"t-${Math.random().toString(36).slice(2)}.example.com","accessToken":"a","webhookSecret":"b"}`;

  it.for([
    ['a NUL in a field', storeJson('a\\u0000b'), 'name'],
    ['an unpaired high surrogate', storeJson('a\\ud800b'), 'name'],
    ['an unpaired low surrogate', storeJson('\\udc00'), 'name'],
    ['a NUL in a key', '{"na\\u0000me":"x"}', 'na\u0000me'],
  ] as const)('answers 400, not 500, for %s in a JSON body', async ([_label, body, param], { api, user }) => {
    const before = (await api.get('/v1/reseller_stores?limit=100', { token: user.token })).body.data.length;
    expectError(await api.post('/v1/reseller_stores', json(user, body)), 400, 'validation_failed', param);
    expect((await api.get('/v1/reseller_stores?limit=100', { token: user.token })).body.data).toHaveLength(before);
  });

  it('names the nested field', async ({ api, user, storeId }) => {
    const body = JSON.stringify({
      name: 'Supplier',
      platform: 'custom',
      shopDomain: 'nested.example.com',
      accessToken: 'a',
      webhookSecret: 'b',
      vendorTag: 'Nested',
      pricingMode: 'field_rules',
      pricingConfig: { type: 'field_rules', rules: [{ field: 'title', op: 'set', value: 'ok' }, { field: 'sku', op: 'set', value: 'SKU\u0000' }] },
    });
    expect(body).toContain('\\u0000');
    const response = await api.post(`/v1/reseller_stores/${storeId}/source_stores`, json(user, body));
    expectError(response, 400, 'validation_failed', 'pricingConfig.rules.1.value');
  });

  it.for([
    ['PATCH', (storeId: string): string => `/v1/reseller_stores/${storeId}`, '{"name":"x\\u0000"}', 'name'],
    ['POST', (_storeId: string): string => '/v1/api_keys', '{"name":"k\\u0000","environment":"live"}', 'name'],
  ] as const)('answers 400 for %s with a NUL', async ([method, path, body, param], { api, user, storeId }) => {
    expectError(await api.request(method, path(storeId), json(user, body)), 400, 'validation_failed', param);
  });

  it('keeps text with escaped backslashes and proper surrogate pairs', async ({ api, user }) => {
    const response = await api.post('/v1/reseller_stores', json(user, storeJson('back\\\\u0000slash \\ud83d\\ude00')));
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(response.body.name).toBe('back\\u0000slash \u{1F600}');
  });

  it.for([
    ['a NUL in a query parameter', '/v1/reseller_stores?starting_after=%00', 'starting_after'],
    ['a NUL in an audit filter', '/v1/audit_log?action=a%00b', 'action'],
    ['a NUL in a path parameter', '/v1/reseller_stores/rst_%00', 'path'],
    ['a NUL in a nested path parameter', `/v1/reseller_stores/rst_x/source_stores/%00`, 'path'],
    ['malformed percent-encoding in a path parameter', '/v1/reseller_stores/%FF', 'path'],
    ['truncated percent-encoding in a path parameter', '/v1/reseller_stores/%E0%A4%A', 'path'],
  ] as const)('answers 400, not 500, for %s', async ([_label, path, param], { api, user }) => {
    expectError(await api.get(path, { token: user.token }), 400, 'validation_failed', param);
  });
});

describe('errors', () => {
  it('answers an unknown route with a 404 not_found envelope', async ({ api, user }) => {
    for (const [method, path] of [
      ['GET', '/v1/nothing'],
      // (GET / leads to the console: test/start-up.test.ts)
      ['GET', '/v1'],
      ['POST', '/v1/reseller_stores/x/y/z'],
      ['PUT', '/v1/reseller_stores'],
      ['GET', '/v2/reseller_stores'],
    ] as const) {
      const response = await api.request(method, path, { token: user.token });
      expectError(response, 404, 'not_found');
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    }
  });

  it('uses exactly {error: {code, message, param?, details?}, request_id} for every error', async ({ api, user }) => {
    const responses = [
      await api.post('/v1/reseller_stores', { token: user.token, body: { name: 1 } }),
      await api.get('/v1/reseller_stores'),
      await api.get('/v1/reseller_stores/rst_missing', { token: user.token }),
      await api.post('/v1/auth/login', { body: { email: user.email, password: 'wrong password' } }),
      await api.post('/v1/auth/register', { body: { email: user.email, password: user.password } }),
      await api.post('/v1/reseller_stores', { token: user.token, rawBody: 'x', headers: { 'content-type': 'text/plain' } }),
      await api.get('/v1/reseller_stores?limit=-1', { token: user.token }),
    ];
    expect(responses.map((r) => r.status)).toEqual([400, 401, 404, 401, 409, 415, 400]);
    for (const response of responses) {
      expectErrorEnvelope(response.body);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const text = JSON.stringify(response.body);
      expect(text).not.toMatch(/\bat .*\.(ts|js):\d+|stack|select |insert |postgres|mikro/i);
    }
  });
});

describe('authentication', () => {
  it('is checked before the request is validated, so an anonymous caller learns nothing about input rules', async ({ api, storeId }) => {
    for (const [method, path, body] of [
      ['GET', '/v1/reseller_stores?limit=0', undefined],
      ['POST', '/v1/reseller_stores', { name: '' }],
      ['PATCH', `/v1/reseller_stores/${storeId}`, { shopDomain: 'x' }],
      ['GET', `/v1/reseller_stores/${'x'.repeat(80)}`, undefined],
      ['POST', '/v1/api_keys', {}],
    ] as const) {
      expectError(await api.request(method, path, { body }), 401, 'unauthorized');
      expectError(await api.request(method, path, { body, token: 'not-a-token' }), 401, 'unauthorized');
    }
  });
});

describe('operations endpoints', () => {
  it('GET /healthz answers 200', async ({ api }) => {
    const response = await api.get('/healthz');
    expect(response.status).toBe(200);
    expect(response.body.status).toBe('ok');
  });

  it('GET /readyz answers 200 with its checks', async ({ api }) => {
    const response = await api.get('/readyz');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'ok', checks: { database: 'ok' } });
  });

  it('GET /openapi.json answers the OpenAPI document', async ({ api }) => {
    const response = await api.get('/openapi.json');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('x-request-id')).toMatch(GENERATED_ID);
    expect(response.body.openapi).toMatch(/^3\./);
    expect(Object.keys(response.body.paths)).toEqual(
      expect.arrayContaining(['/v1/auth/register', '/v1/reseller_stores', '/v1/reseller_stores/{rst_id}/source_stores/{id}', '/v1/audit_log']),
    );
  });
});
