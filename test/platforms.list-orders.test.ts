/**
 * listOrders of each adapter against the sandbox: the platform's own paging followed exactly, the
 * listing fields and the order read as its webhook would be, and the same pacing and error mapping
 * as every other call.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORMS, type Platform } from '../src/orders/types.ts';
import { type PlatformAdapter, PlatformError, type StoreConnection, createPlatformAdapters } from '../src/platforms/index.ts';
import { nextLink } from '../src/platforms/listing.ts';
import type { ListedOrder } from '../src/platforms/types.ts';
import { buildOrderPayload } from './sandbox/server.ts';
import { adapterBench } from './support/adapters.ts';

const T0 = Date.parse('2026-11-20T08:00:00.000Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000);

const bench = adapterBench({ name: 'list' });
const { newStore } = bench;

const orderId = (platform: Platform, n: number) => (platform === 'custom' ? `ord_${n}` : n);

/** Seeds orders created at the given minutes after T0, ids 1..n in that order. */
function seedOrders(store: StoreConnection, minutes: number[], extra: { cancelled?: number[] } = {}) {
  return minutes.map((minute, index) => {
    const n = index + 1;
    const payload = buildOrderPayload(store.platform, {
      id: orderId(store.platform, n),
      createdAt: at(minute).toISOString(),
      cancelled: extra.cancelled?.includes(n) ?? false,
      lines: [{ sku: `SKU-${n}`, title: `Item ${n}`, vendor: 'Acme', quantity: 1, price: '10.00' }],
    });
    return bench.sandbox.seedOrder(store.shopDomain, store.platform, payload);
  });
}

async function listAll(adapter: PlatformAdapter, store: StoreConnection, since: Date): Promise<ListedOrder[][]> {
  const pages: ListedOrder[][] = [];
  for await (const page of adapter.listOrders(store, since)) pages.push(page);
  return pages;
}

async function failureOf(run: Promise<unknown>, store: StoreConnection): Promise<PlatformError> {
  const error = await run.then(
    () => expect.fail('expected the listing to fail'),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(PlatformError);
  expect((error as PlatformError).message).not.toContain(store.accessToken);
  return error as PlatformError;
}

const listPaths = (store: StoreConnection) =>
  bench.sandbox.requestsFor(store.shopDomain).map((request) => decodeURIComponent(request.path));

describe.each(PLATFORMS)('%s listOrders', (platform) => {
  it('follows the paging across pages, oldest first, and stops after the last', async () => {
    const store = newStore(platform);
    seedOrders(store, [5, 1, 3, 4, 2]);
    bench.sandbox.setListPageSize(store.shopDomain, 2);
    const pages = await listAll(bench.adapters[platform], store, at(0));
    // platform_b asks again from the second before each page's last order, which the next page shows again (and is left out).
    expect(pages.map((page) => page.length)).toEqual(platform === 'platform_b' ? [2, 1, 1, 1] : [2, 2, 1]);
    expect(pages.flat().map((order) => order.externalOrderId)).toEqual(['2', '5', '3', '4', '1'].map((n) => String(orderId(platform, Number(n)))));
    expect(pages.flat().map((order) => order.createdAt.getTime())).toEqual([1, 2, 3, 4, 5].map((minute) => at(minute).getTime()));
    expect(bench.sandbox.requestsFor(store.shopDomain)).toHaveLength(platform === 'platform_b' ? 4 : 3);
  });

  it('asks only for orders created since the time given', async () => {
    const store = newStore(platform);
    seedOrders(store, [1, 10, 20]);
    const orders = (await listAll(bench.adapters[platform], store, at(5))).flat();
    expect(orders.map((order) => order.externalOrderId)).toEqual([2, 3].map((n) => String(orderId(platform, n))));
  });

  it('reads each order exactly as its webhook, and tells cancelled ones apart', async () => {
    const store = newStore(platform);
    const [webhookBody] = seedOrders(store, [1, 2], { cancelled: [2] });
    const [open, cancelled] = (await listAll(bench.adapters[platform], store, at(0))).flat();
    expect(open).toEqual({
      externalOrderId: String(orderId(platform, 1)),
      createdAt: at(1),
      cancelled: false,
      order: bench.adapters[platform].parseOrderWebhook(webhookBody),
    });
    expect(cancelled).toMatchObject({ externalOrderId: String(orderId(platform, 2)), cancelled: true });
  });

  if (platform === 'platform_b') {
    it('calls a refunded order cancelled, as its webhook reader does', async () => {
      const store = newStore(platform);
      const [payload] = seedOrders(store, [1]);
      bench.sandbox.seedOrder(store.shopDomain, platform, { ...payload, status: 'refunded' });
      const [listed] = (await listAll(bench.adapters[platform], store, at(0))).flat();
      expect(listed).toMatchObject({ externalOrderId: String(orderId(platform, 1)), cancelled: true });
    });
  }

  it('keeps an order its webhook reader refuses, marked invalid, without failing the page', async () => {
    const store = newStore(platform);
    const [payload] = seedOrders(store, [1]);
    bench.sandbox.seedOrder(store.shopDomain, platform, { ...payload, currency: 'not a currency' });
    const [listed] = (await listAll(bench.adapters[platform], store, at(0))).flat();
    expect(listed?.order).toEqual({ invalid: expect.stringContaining('currency'), param: 'currency' });
  });

  it('a bad token is a non-retryable 401 whose message hides the token', async () => {
    const store = newStore(platform);
    const wrong = { ...store, accessToken: 'tok_wrong_secret' };
    const error = await failureOf(listAll(bench.adapters[platform], wrong, at(0)), wrong);
    expect(error).toMatchObject({ retryable: false, status: 401 });
  });

  it('a 5xx on a later page fails the listing after the pages before it, retryable', async () => {
    const store = newStore(platform);
    seedOrders(store, [1, 2, 3]);
    bench.sandbox.setListPageSize(store.shopDomain, 2);
    const seen: ListedOrder[][] = [];
    const listing = (async () => {
      for await (const page of bench.adapters[platform].listOrders(store, at(0))) {
        seen.push(page);
        bench.sandbox.setFaults(store.shopDomain, { failNext: 1, status: 503 });
      }
    })();
    const error = await failureOf(listing, store);
    expect(error).toMatchObject({ retryable: true, status: 503 });
    expect(seen.map((page) => page.length)).toEqual([2]);
  });

  it('a 429 with a short Retry-After is waited out within the listing', async () => {
    const store = newStore(platform);
    seedOrders(store, [1]);
    bench.sandbox.setFaults(store.shopDomain, { rateLimitNext: 1, retryAfterSeconds: 1 });
    const orders = (await listAll(bench.adapters[platform], store, at(0))).flat();
    expect(orders).toHaveLength(1);
    expect(bench.sandbox.requestsFor(store.shopDomain).map((request) => request.status)).toEqual([429, 200]);
  });

  it('goes through the store pacing like every other call', async () => {
    const paced = bench.adaptersWith({ pacing: { [platform]: { burst: 1, perSecond: 5 } } });
    const store = newStore(platform);
    seedOrders(store, [1, 2, 3, 4]);
    bench.sandbox.setListPageSize(store.shopDomain, 1);
    const started = performance.now();
    expect((await listAll(paced[platform], store, at(0))).flat()).toHaveLength(4);
    // One call at once, then one every 200 ms.
    expect(performance.now() - started).toBeGreaterThanOrEqual(550);
  });

  it('a timeout is retryable', async () => {
    const impatient = bench.adaptersWith({ timeoutMs: 100 });
    const store = newStore(platform);
    bench.sandbox.setFaults(store.shopDomain, { latencyMs: 400 });
    const error = await failureOf(listAll(impatient[platform], store, at(0)), store);
    expect(error).toMatchObject({ retryable: true, status: null });
  });
});

describe('the platforms paging on the wire', () => {
  it('platform_a: filters on the first request, then only the Link URL as given (page_info and limit)', async () => {
    const store = newStore('platform_a');
    seedOrders(store, [1, 2, 3]);
    bench.sandbox.setListPageSize(store.shopDomain, 2);
    await listAll(bench.adapters.platform_a, store, at(0));
    const [first, second] = listPaths(store);
    expect(first).toBe(`/admin/api/2025-01/orders.json?status=any&created_at_min=${at(0).toISOString()}&limit=250`);
    expect(second).toMatch(/^\/admin\/api\/2025-01\/orders\.json\?page_info=[^&]+&limit=250$/);
  });

  it('platform_b: sorted by date ascending, each next page asked after the second before the last order listed', async () => {
    const store = newStore('platform_b');
    seedOrders(store, [1, 2, 3]);
    bench.sandbox.setListPageSize(store.shopDomain, 2);
    await listAll(bench.adapters.platform_b, store, at(0));
    const path = (after: Date) => `/wp-json/wc/v3/orders?after=${after.toISOString()}&per_page=100&page=1&orderby=date&order=asc`;
    expect(listPaths(store)).toEqual([path(at(0)), path(new Date(at(2).getTime() - 1000))]);
  });

  it('custom: nextCursor sent back as cursor until it is null', async () => {
    const store = newStore('custom');
    seedOrders(store, [1, 2, 3]);
    bench.sandbox.setListPageSize(store.shopDomain, 2);
    await listAll(bench.adapters.custom, store, at(0));
    const [first, second] = listPaths(store);
    expect(first).toBe(`/orders?createdAfter=${at(0).toISOString()}&limit=100`);
    expect(second).toMatch(/^\/orders\?createdAfter=[^&]+&limit=100&cursor=[^&]+$/);
  });

  it('platform_b: an empty store is one request', async () => {
    const store = newStore('platform_b');
    expect(await listAll(bench.adapters.platform_b, store, at(0))).toEqual([[]]);
    expect(listPaths(store)).toHaveLength(1);
  });
});

describe('a next link that points outside the store', () => {
  let platform: Server;
  let elsewhere: Server;
  const elsewhereHits: string[] = [];

  beforeAll(async () => {
    elsewhere = createServer((request, response) => {
      elsewhereHits.push(String(request.headers['x-platform-access-token']));
      response.writeHead(200, { 'Content-Type': 'application/json' }).end('{"orders":[]}');
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    const elsewhereUrl = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
    platform = createServer((_request, response) => {
      response
        .writeHead(200, {
          'Content-Type': 'application/json',
          Link: `<${elsewhereUrl}/admin/api/2025-01/orders.json?page_info=abc>; rel="next"`,
        })
        .end('{"orders":[]}');
    });
    await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => platform.close(() => resolve()));
    await new Promise<void>((resolve) => elsewhere.close(() => resolve()));
  });

  it('is refused without sending the token there', async () => {
    const local = createPlatformAdapters({
      baseUrlTemplate: `http://127.0.0.1:${(platform.address() as AddressInfo).port}/{shopDomain}`,
      pacer: bench.pacing.pacer(),
    });
    const store: StoreConnection = { storeId: 'list_store_elsewhere', platform: 'platform_a', shopDomain: 'shop.example', accessToken: 'tok_never_leaves' };
    const error = await failureOf(listAll(local.platform_a, store, at(0)), store);
    expect(error).toMatchObject({ retryable: false });
    expect(error.message).toContain('outside the store');
    expect(elsewhereHits).toEqual([]);
  });
});

describe('nextLink', () => {
  it.each([
    ['<https://s.example/a?page_info=1>; rel="next"', 'https://s.example/a?page_info=1'],
    ['<https://s.example/p>; rel="previous", <https://s.example/n>; rel="next"', 'https://s.example/n'],
    ['<https://s.example/n>; rel=next', 'https://s.example/n'],
    ['<https://s.example/p>; rel="previous"', null],
    [null, null],
  ])('%s -> %s', (header, expected) => {
    expect(nextLink(header)).toBe(expected);
  });
});

describe('sandbox: customer orders and their webhooks', () => {
  let receiver: Server;
  let receiverUrl: string;
  const received: unknown[] = [];

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        response.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  });
  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

  const order = (id: number) => buildOrderPayload('platform_a', { id, lines: [{ sku: 'S', title: 'T', vendor: 'V', quantity: 1, price: '1.00' }] });

  it('delivers, drops or holds the orders/create webhook, and lists the order either way', async () => {
    received.length = 0;
    const store = newStore('platform_a');
    bench.sandbox.subscribeWebhooks(store.shopDomain, { targetUrl: receiverUrl, secret: 'whsec_sandbox' });
    expect(await bench.sandbox.placeCustomerOrder(store.shopDomain, 'platform_a', order(1))).toMatchObject({ delivered: { status: 200 } });
    bench.sandbox.setFaults(store.shopDomain, { dropWebhooksNext: 1, holdWebhooksNext: 1 });
    expect(await bench.sandbox.placeCustomerOrder(store.shopDomain, 'platform_a', order(2))).toEqual({ dropped: true });
    expect(await bench.sandbox.placeCustomerOrder(store.shopDomain, 'platform_a', order(3))).toEqual({ held: true });
    expect(received.map((body) => (body as { id: number }).id)).toEqual([1]);
    expect((await bench.sandbox.releaseWebhooks(store.shopDomain)).map((result) => result.status)).toEqual([200]);
    expect(received.map((body) => (body as { id: number }).id)).toEqual([1, 3]);
    const listed = (await listAll(bench.adapters.platform_a, store, new Date(0))).flat();
    expect(listed.map((entry) => entry.externalOrderId)).toEqual(['1', '2', '3']);
  });

  it('cancels an order over the control API; the list shows it cancelled', async () => {
    const store = newStore('custom');
    const [payload] = seedOrders(store, [1]);
    const control = `${bench.sandbox.url}/_sandbox/stores/${store.shopDomain}`;
    const response = await fetch(`${control}/orders/${String(payload!.id)}/cancel`, { method: 'POST', body: JSON.stringify({ platform: 'custom' }) });
    expect(response.status).toBe(200);
    const [listed] = (await listAll(bench.adapters.custom, store, at(0))).flat();
    expect(listed?.cancelled).toBe(true);
  });
});
