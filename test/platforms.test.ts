import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PLATFORMS,
  type Platform,
  type ResellerOrder,
  type SupplierOrder,
  type Tracking,
} from '../src/orders/types.ts';
import { PayloadError, PlatformError, type StoreConnection, createPlatformAdapters } from '../src/platforms/index.ts';
import { createdLines } from '../src/platforms/cancelling.ts';
import { verifySignature } from '../src/webhooks/signature.ts';
import type { PacingRate } from '../src/pacing/rates.ts';
import { SAMPLE_ADDRESS, buildFulfillmentPayload, buildOrderPayload } from './sandbox/server.ts';
import { adapterBench } from './support/adapters.ts';

const bench = adapterBench({ name: 'shop' });
const { newStore } = bench;

/**
 * Adapters like `bench.adaptersWith()`, and the wait each call's turn reservation answered, per store: how
 * "not paced" is checked (a wait of 0 ms), rather than by how long the call took.
 */
function adaptersRecordingWaits(rates: Partial<Record<Platform, PacingRate>>) {
  const pacer = bench.pacing.pacer(rates);
  const waits = new Map<string, number[]>();
  const recording = {
    reserve: async (store: { storeId: string; platform: Platform }) => {
      const waitMs = await pacer.reserve(store);
      waits.set(store.storeId, [...(waits.get(store.storeId) ?? []), waitMs]);
      return waitMs;
    },
    pause: (store: { storeId: string; platform: Platform }, ms: number) => pacer.pause(store, ms),
    release: (store: { storeId: string; platform: Platform }, calls: number) => pacer.release(store, calls),
  };
  const paced = createPlatformAdapters({ baseUrlTemplate: bench.sandbox.baseUrlTemplate, timeoutMs: 2_000, maxInlineRetryAfterMs: 1_500, pacer: recording });
  return { paced, waitsOf: (store: StoreConnection) => waits.get(store.storeId) ?? [] };
}

const supplierOrder: SupplierOrder = {
  reference: 'job-42',
  resellerOrderId: '450789469',
  currency: 'EUR',
  email: 'ada@example.com',
  shippingAddress: { ...SAMPLE_ADDRESS, phone: null },
  lines: [
    { sku: 'MUG-1', title: 'Mug', quantity: 2, unitPriceMinor: 1250 },
    { sku: 'TEE-2', title: 'Tee', quantity: 1, unitPriceMinor: 1999 },
  ],
};

const tracking: Tracking = {
  numbers: ['1Z001', '1Z002'],
  urls: ['https://track.example/1Z001', 'https://track.example/1Z002'],
  company: 'UPS',
};

const resellerPayload = (platform: Platform) =>
  buildOrderPayload(platform, {
    id: platform === 'custom' ? 'ord_abc' : 450789469,
    currency: 'EUR',
    email: 'ada@example.com',
    lines: [{ sku: 'MUG-1', title: 'Mug', vendor: 'Acme Mugs', quantity: 3, price: '12.50' }],
  });

const expectedResellerOrder = (platform: Platform): ResellerOrder => ({
  externalOrderId: platform === 'custom' ? 'ord_abc' : '450789469',
  currency: 'EUR',
  email: 'ada@example.com',
  shippingAddress: SAMPLE_ADDRESS,
  // platform_b sends the line's exact total beside its float price.
  lines: [{ sku: 'MUG-1', title: 'Mug', vendor: 'Acme Mugs', quantity: 3, unitPriceMinor: 1250, ...(platform === 'platform_b' && { totalMinor: 3750 }) }],
});

/** Awaits a call expected to fail and checks the failure never reveals the store's token. */
async function platformError(call: Promise<unknown>, store: StoreConnection): Promise<PlatformError> {
  const error = await call.then(
    () => expect.fail('expected the call to fail'),
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(PlatformError);
  expect((error as PlatformError).message).not.toContain(store.accessToken);
  return error as PlatformError;
}

function payloadError(parse: () => unknown): PayloadError {
  try {
    parse();
  } catch (error) {
    expect(error).toBeInstanceOf(PayloadError);
    return error as PayloadError;
  }
  return expect.fail('expected a PayloadError');
}

describe('createOrder', () => {
  it('sends platform_a an order with decimal-string prices, tags and note attributes', async () => {
    const store = newStore('platform_a');
    const { id } = await bench.adapters.platform_a.createOrder(store, supplierOrder, 'key-a');
    const [received] = bench.sandbox.ordersFor(store.shopDomain);
    expect(id).toBe(String(received?.id));
    expect(received?.idempotencyKey).toBe('key-a');
    expect(received?.body).toEqual({
      order: {
        line_items: [
          { sku: 'MUG-1', title: 'Mug', quantity: 2, price: '12.50' },
          { sku: 'TEE-2', title: 'Tee', quantity: 1, price: '19.99' },
        ],
        email: 'ada@example.com',
        shipping_address: {
          name: 'Ada Lovelace',
          address1: '12 Analytical Row',
          address2: null,
          city: 'London',
          province: 'England',
          zip: 'EC1A 1BB',
          country_code: 'GB',
          phone: null,
        },
        currency: 'EUR',
        tags: 'reseller-sync',
        note_attributes: [
          { name: 'reseller_order_id', value: '450789469' },
          { name: 'sync_reference', value: 'job-42' },
        ],
      },
    });
  });

  it('sends platform_b line totals, split names and meta data', async () => {
    const store = newStore('platform_b');
    const { id } = await bench.adapters.platform_b.createOrder(store, supplierOrder, 'key-b');
    const [received] = bench.sandbox.ordersFor(store.shopDomain);
    expect(id).toBe(String(received?.id));
    expect(received?.body).toEqual({
      status: 'processing',
      line_items: [
        { sku: 'MUG-1', name: 'Mug', quantity: 2, total: '25.00' },
        { sku: 'TEE-2', name: 'Tee', quantity: 1, total: '19.99' },
      ],
      shipping: {
        first_name: 'Ada',
        last_name: 'Lovelace',
        address_1: '12 Analytical Row',
        city: 'London',
        state: 'England',
        postcode: 'EC1A 1BB',
        country: 'GB',
      },
      billing: { email: 'ada@example.com' },
      currency: 'EUR',
      meta_data: [
        { key: 'sync_reference', value: 'job-42' },
        { key: 'reseller_order_id', value: '450789469' },
      ],
    });
  });

  it('sends custom endpoints the reference and unit prices, and returns their string id', async () => {
    const store = newStore('custom');
    const { id } = await bench.adapters.custom.createOrder(store, supplierOrder, 'key-c');
    const [received] = bench.sandbox.ordersFor(store.shopDomain);
    expect(id).toMatch(/^ord_\d+$/);
    expect(id).toBe(received?.id);
    expect(received?.body).toEqual({
      reference: 'job-42',
      currency: 'EUR',
      lines: [
        { sku: 'MUG-1', title: 'Mug', quantity: 2, unitPrice: '12.50' },
        { sku: 'TEE-2', title: 'Tee', quantity: 1, unitPrice: '19.99' },
      ],
      shippingAddress: { ...SAMPLE_ADDRESS, phone: null },
      email: 'ada@example.com',
    });
  });

  it.each(PLATFORMS)('%s: a repeated idempotency key creates one order and returns its id', async (platform) => {
    const store = newStore(platform);
    const first = await bench.adapters[platform].createOrder(store, supplierOrder, 'same-key');
    const second = await bench.adapters[platform].createOrder(store, supplierOrder, 'same-key');
    expect(second).toEqual(first);
    expect(bench.sandbox.ordersFor(store.shopDomain)).toHaveLength(1);
    expect(bench.sandbox.requestsFor(store.shopDomain).map((request) => request.idempotentReplay)).toEqual([false, true]);
  });

  it.each(PLATFORMS)('%s: a lost response is retryable and the retry finds the first order', async (platform) => {
    const store = newStore(platform);
    bench.sandbox.setFaults(store.shopDomain, { acceptThenDropNext: 1 });
    const error = await platformError(bench.adapters[platform].createOrder(store, supplierOrder, 'lost'), store);
    expect(error.retryable).toBe(true);
    const { id } = await bench.adapters[platform].createOrder(store, supplierOrder, 'lost');
    const orders = bench.sandbox.ordersFor(store.shopDomain);
    expect(orders).toHaveLength(1);
    expect(id).toBe(String(orders[0]?.id));
  });
});

describe('getOrder', () => {
  it.each(PLATFORMS)('%s: normalises the platform order', async (platform) => {
    const store = newStore(platform);
    bench.sandbox.seedOrder(store.shopDomain, platform, resellerPayload(platform));
    const externalId = platform === 'custom' ? 'ord_abc' : '450789469';
    await expect(bench.adapters[platform].getOrder(store, externalId)).resolves.toEqual(expectedResellerOrder(platform));
  });

  it.each(PLATFORMS)('%s: reads back an order it created', async (platform) => {
    const store = newStore(platform);
    const { id } = await bench.adapters[platform].createOrder(store, supplierOrder, 'created');
    const order = await bench.adapters[platform].getOrder(store, id);
    expect(order.lines.map((line) => [line.sku, line.quantity, line.unitPriceMinor])).toEqual([
      ['MUG-1', 2, 1250],
      ['TEE-2', 1, 1999],
    ]);
  });

  it.each(PLATFORMS)('%s: a missing order is a non-retryable 404', async (platform) => {
    const store = newStore(platform);
    const error = await platformError(bench.adapters[platform].getOrder(store, '999'), store);
    expect(error).toMatchObject({ retryable: false, status: 404 });
    expect(error.message).toContain('Not Found');
  });
});

describe('createFulfillment', () => {
  async function orderOn(platform: Platform): Promise<{ store: StoreConnection; orderId: string }> {
    const store = newStore(platform);
    const { id } = await bench.adapters[platform].createOrder(store, supplierOrder, 'order');
    return { store, orderId: id };
  }

  it('posts platform_a one fulfillment carrying every tracking number', async () => {
    const { store, orderId } = await orderOn('platform_a');
    const { id } = await bench.adapters.platform_a.createFulfillment(store, orderId, tracking, 'ful');
    const [received] = bench.sandbox.fulfillmentsFor(store.shopDomain);
    expect(id).toBe(String(received?.id));
    expect(received?.body).toEqual({
      fulfillment: {
        tracking_number: '1Z001',
        tracking_numbers: ['1Z001', '1Z002'],
        tracking_url: 'https://track.example/1Z001',
        tracking_urls: ['https://track.example/1Z001', 'https://track.example/1Z002'],
        tracking_company: 'UPS',
        notify_customer: true,
      },
    });
  });

  it('posts platform_b one shipment tracking per number, each with its own idempotency key', async () => {
    const { store, orderId } = await orderOn('platform_b');
    const first = await bench.adapters.platform_b.createFulfillment(store, orderId, tracking, 'ful');
    const repeat = await bench.adapters.platform_b.createFulfillment(store, orderId, tracking, 'ful');
    const received = bench.sandbox.fulfillmentsFor(store.shopDomain);
    expect(repeat).toEqual(first);
    expect(first.id).toBe(received[0]?.id);
    expect(received.map((fulfillment) => [fulfillment.idempotencyKey, fulfillment.body])).toEqual([
      ['ful-0', { tracking_provider: 'UPS', tracking_number: '1Z001', tracking_link: 'https://track.example/1Z001' }],
      ['ful-1', { tracking_provider: 'UPS', tracking_number: '1Z002', tracking_link: 'https://track.example/1Z002' }],
    ]);
  });

  it('posts custom endpoints tracking numbers, urls and carrier', async () => {
    const { store, orderId } = await orderOn('custom');
    const { id } = await bench.adapters.custom.createFulfillment(store, orderId, tracking, 'ful');
    const [received] = bench.sandbox.fulfillmentsFor(store.shopDomain);
    expect(id).toBe(received?.id);
    expect(received?.body).toEqual({
      trackingNumbers: ['1Z001', '1Z002'],
      trackingUrls: ['https://track.example/1Z001', 'https://track.example/1Z002'],
      carrier: 'UPS',
      notifyCustomer: true,
    });
  });

  it.each(PLATFORMS)('%s: the recorded fulfillment payload parses back to the tracking sent', async (platform) => {
    const { store, orderId } = await orderOn(platform);
    await bench.adapters[platform].createFulfillment(store, orderId, tracking, 'ful');
    const [received] = bench.sandbox.fulfillmentsFor(store.shopDomain);
    const parsed = bench.adapters[platform].parseFulfillmentWebhook(received?.payload)!;
    expect(parsed.sourceOrderId).toBe(orderId);
    expect(parsed.tracking.numbers[0]).toBe('1Z001');
    expect(parsed.tracking.company).toBe('UPS');
  });
});

describe('failures', () => {
  it.each(PLATFORMS)('%s: a 500 is retryable', async (platform) => {
    const store = newStore(platform);
    bench.sandbox.setFaults(store.shopDomain, { failNext: 1 });
    const error = await platformError(bench.adapters[platform].createOrder(store, supplierOrder, 'k'), store);
    expect(error).toMatchObject({ retryable: true, status: 500 });
    expect(bench.sandbox.ordersFor(store.shopDomain)).toHaveLength(0);
  });

  it.each(PLATFORMS)('%s: a 422 is not retryable and carries the platform message', async (platform) => {
    const store = newStore(platform);
    const error = await platformError(
      bench.adapters[platform].createOrder(store, { ...supplierOrder, lines: [] }, 'k'),
      store,
    );
    expect(error).toMatchObject({ retryable: false, status: 422 });
    expect(error.message).toMatch(/(line_items|lines): .*(blank|at least one line)/);
  });

  it.each(PLATFORMS)('%s: a bad token is a non-retryable 401 whose message hides the token', async (platform) => {
    const store = newStore(platform);
    const wrongToken = { ...store, accessToken: 'shpat_wrong_token' };
    const error = await platformError(bench.adapters[platform].getOrder(wrongToken, '1'), wrongToken);
    expect(error).toMatchObject({ retryable: false, status: 401 });
    expect(error.message).toContain('[redacted]');
  });

  it.each(PLATFORMS)('%s: a 429 with a short Retry-After is waited out inside the call', async (platform) => {
    const store = newStore(platform);
    bench.sandbox.setFaults(store.shopDomain, { rateLimitNext: 1, retryAfterSeconds: 1 });
    const started = performance.now();
    await bench.adapters[platform].createOrder(store, supplierOrder, 'k');
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
    expect(bench.sandbox.ordersFor(store.shopDomain)).toHaveLength(1);
    expect(bench.sandbox.requestsFor(store.shopDomain).map((request) => request.status)).toEqual([429, 201]);
  });

  it('a 429 with a long Retry-After is thrown and holds back further calls to that store', async () => {
    const store = newStore('platform_a');
    bench.sandbox.setFaults(store.shopDomain, { rateLimitNext: 1, retryAfterSeconds: 30 });
    const error = await platformError(bench.adapters.platform_a.createOrder(store, supplierOrder, 'k'), store);
    expect(error).toMatchObject({ retryable: true, status: 429, retryAfterMs: 30_000 });

    const held = await platformError(bench.adapters.platform_a.getOrder(store, '1'), store);
    expect(held.retryable).toBe(true);
    expect(held.retryAfterMs).toBeGreaterThan(25_000);
    expect(bench.sandbox.requestsFor(store.shopDomain)).toHaveLength(1);
  });

  it('a Retry-After longer than maxRetryAfterMs pauses the store for maxRetryAfterMs only', async () => {
    const bounded = bench.adaptersWith({ maxRetryAfterMs: 2_000 });
    const store = newStore('platform_b');
    bench.sandbox.setFaults(store.shopDomain, { rateLimitNext: 1, retryAfterSeconds: 3_600 });
    const error = await platformError(bounded.platform_b.createOrder(store, supplierOrder, 'k'), store);
    expect(error).toMatchObject({ retryable: true, status: 429, retryAfterMs: 2_000 });
    // The store is held back for those 2 s, not an hour.
    const held = await platformError(bounded.platform_b.createOrder(store, supplierOrder, 'k'), store);
    expect(held).toMatchObject({ retryable: true, sent: false });
    expect(held.retryAfterMs).toBeGreaterThan(1_500);
    expect(held.retryAfterMs).toBeLessThanOrEqual(2_000);
  });

  it.each(PLATFORMS)('%s: a timeout is retryable', async (platform) => {
    const impatient = bench.adaptersWith({ timeoutMs: 100 });
    const store = newStore(platform);
    bench.sandbox.setFaults(store.shopDomain, { latencyMs: 400 });
    const error = await platformError(impatient[platform].getOrder(store, '1'), store);
    expect(error).toMatchObject({ retryable: true, status: null });
    expect(error.message).toContain('timed out after 100 ms');
  });

  it.each(PLATFORMS)('%s: a dropped connection is retryable', async (platform) => {
    const store = newStore(platform);
    bench.sandbox.setFaults(store.shopDomain, { dropNext: 1 });
    const error = await platformError(bench.adapters[platform].createOrder(store, supplierOrder, 'k'), store);
    expect(error).toMatchObject({ retryable: true, status: null });
    expect(bench.sandbox.ordersFor(store.shopDomain)).toHaveLength(0);
  });

  it('refuses a shop domain that is not a host name before sending anything', async () => {
    const store = { ...newStore('platform_a'), shopDomain: 'evil.example/steal?x=' };
    const error = await platformError(bench.adapters.platform_a.getOrder(store, '1'), store);
    expect(error.retryable).toBe(false);
  });
});

describe('pacing', () => {
  it('spreads calls to one store at the configured rate after the burst', async () => {
    const paced = bench.adaptersWith({ pacing: { platform_b: { burst: 2, perSecond: 10 } } });
    const store = newStore('platform_b');
    bench.sandbox.seedOrder(store.shopDomain, 'platform_b', resellerPayload('platform_b'));
    const started = performance.now();
    await Promise.all(Array.from({ length: 5 }, () => paced.platform_b.getOrder(store, '450789469')));
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);

    const arrivals = bench.sandbox.requestsFor(store.shopDomain).map((request) => Date.parse(request.at));
    expect(arrivals).toHaveLength(5);
    expect((arrivals[4] ?? 0) - (arrivals[0] ?? 0)).toBeGreaterThanOrEqual(250);
  });

  it("keeps credentials apart: two store records of one domain each have their own allowance", async () => {
    const { paced, waitsOf } = adaptersRecordingWaits({ custom: { burst: 1, perSecond: 1 } });
    const real = newStore('custom');
    const stranger = { ...real, storeId: `${real.storeId}_stranger` };
    bench.sandbox.seedOrder(real.shopDomain, 'custom', resellerPayload('custom'));
    await paced.custom.getOrder(stranger, 'ord_abc');
    await paced.custom.getOrder(stranger, 'ord_abc').catch(() => null);
    await paced.custom.getOrder(real, 'ord_abc');
    // The stranger's record spent its allowance (its second call waited or was not sent); the real one's turn was at once.
    expect(waitsOf(stranger)[1]).toBeGreaterThan(0);
    expect(waitsOf(real)).toEqual([0]);
  });

  it('turns the caller already waited for (heldTurns) are spent, one per call, without reserving others', async () => {
    const paced = bench.adaptersWith({ pacing: { custom: { burst: 1, perSecond: 0.2 } } });
    const store = newStore('custom');
    bench.sandbox.seedOrder(store.shopDomain, 'custom', resellerPayload('custom'));
    await paced.custom.getOrder(store, 'ord_abc');
    // The bucket is empty for five seconds, but these two calls' turns were already waited for.
    const heldTurns = { remaining: 2 };
    const connection = { ...store, heldTurns };
    await paced.custom.getOrder(connection, 'ord_abc');
    await paced.custom.getOrder(connection, 'ord_abc');
    expect(heldTurns.remaining).toBe(0);
    // Once they are spent, the next call's turn is too far away to wait for inside the call: not sent.
    const error = await platformError(paced.custom.getOrder(connection, 'ord_abc'), store);
    expect(error).toMatchObject({ retryable: true, sent: false });
    expect(error.retryAfterMs).toBeGreaterThan(1_500);
    expect(bench.sandbox.requestsFor(store.shopDomain)).toHaveLength(3);
  });

  it('a 429 voids the turns held from before it: the retry waits out the pause', async () => {
    const paced = bench.adaptersWith({ pacing: { custom: { burst: 10, perSecond: 10 } }, maxInlineRetryAfterMs: 3_000 });
    const store = newStore('custom');
    bench.sandbox.seedOrder(store.shopDomain, 'custom', resellerPayload('custom'));
    bench.sandbox.setFaults(store.shopDomain, { rateLimitNext: 1, retryAfterSeconds: 2 });
    const heldTurns = { remaining: 3 };
    await paced.custom.getOrder({ ...store, heldTurns }, 'ord_abc');
    expect(heldTurns.remaining).toBe(0);
    const [refused, retried] = bench.sandbox.requestsFor(store.shopDomain);
    expect(refused!.status).toBe(429);
    expect(retried!.status).toBe(200);
    expect(Date.parse(retried!.at) - Date.parse(refused!.at)).toBeGreaterThanOrEqual(1_900);
  });

  it('keeps stores apart: one store at its limit does not slow another', async () => {
    const { paced, waitsOf } = adaptersRecordingWaits({ custom: { burst: 1, perSecond: 1 } });
    const busy = newStore('custom');
    const idle = newStore('custom');
    bench.sandbox.seedOrder(busy.shopDomain, 'custom', resellerPayload('custom'));
    bench.sandbox.seedOrder(idle.shopDomain, 'custom', resellerPayload('custom'));
    await paced.custom.getOrder(busy, 'ord_abc');
    await paced.custom.getOrder(busy, 'ord_abc').catch(() => null);
    await paced.custom.getOrder(idle, 'ord_abc');
    // The busy store is at its limit (its second turn lies ahead); the idle store's turn was at once.
    expect(waitsOf(busy)[1]).toBeGreaterThan(0);
    expect(waitsOf(idle)).toEqual([0]);
  });
});

describe('parseOrderWebhook', () => {
  it.each(PLATFORMS)('%s: normalises the platform order', (platform) => {
    expect(bench.adapters[platform].parseOrderWebhook(resellerPayload(platform))).toEqual(expectedResellerOrder(platform));
  });

  it.each(PLATFORMS)('%s: defaults a missing currency to USD', (platform) => {
    const { currency: _, ...payload } = resellerPayload(platform);
    expect(bench.adapters[platform].parseOrderWebhook(payload).currency).toBe('USD');
  });

  it('platform_b: derives the unit price from the line total when price is missing', () => {
    const payload = buildOrderPayload('platform_b', {
      id: 7,
      lines: [{ sku: 'S', title: 'T', vendor: 'V', quantity: 4, price: '2.50' }],
    });
    const [line] = payload.line_items as Array<Record<string, unknown>>;
    delete line?.price;
    expect(bench.adapters.platform_b.parseOrderWebhook(payload).lines[0]?.unitPriceMinor).toBe(250);
  });

  it('platform_b: rounds a floating-point price to minor units when there is no total', () => {
    const payload = resellerPayload('platform_b');
    const [line] = payload.line_items as Array<Record<string, unknown>>;
    Object.assign(line ?? {}, { price: 8.335, quantity: 3, total: undefined });
    expect(bench.adapters.platform_b.parseOrderWebhook(payload).lines[0]).toMatchObject({ unitPriceMinor: 834 });
    expect(bench.adapters.platform_b.parseOrderWebhook(payload).lines[0]?.totalMinor).toBeUndefined();
  });

  it.each([
    ['a total the quantity does not divide, without a price', { quantity: 3, total: '10.00', price: undefined }, { quantity: 3, unitPriceMinor: 333, totalMinor: 1000 }],
    ['a float price that disagrees with the total', { quantity: 1, total: '1.01', price: 1.005 }, { quantity: 1, unitPriceMinor: 101, totalMinor: 101 }],
    ['a rounded float price', { quantity: 3, total: '25.00', price: 8.333333333333334 }, { quantity: 3, unitPriceMinor: 833, totalMinor: 2500 }],
  ])('platform_b: prices the line from its exact total: %s', (_label, fields, expected) => {
    const payload = resellerPayload('platform_b');
    Object.assign((payload.line_items as Array<Record<string, unknown>>)[0]!, fields);
    expect(bench.adapters.platform_b.parseOrderWebhook(payload).lines[0]).toMatchObject(expected);
  });

  it('platform_b: sends the supplier a line\'s exact total, not the rounded unit price times the quantity', async () => {
    const store = newStore('platform_b');
    const lines = [{ sku: 'S-3', title: 'Three for ten', quantity: 3, unitPriceMinor: 333, totalMinor: 1000 }];
    await bench.adapters.platform_b.createOrder(store, { ...supplierOrder, lines }, 'key-total');
    const [received] = bench.sandbox.ordersFor(store.shopDomain);
    expect((received?.body as { line_items: unknown[] }).line_items).toEqual([{ sku: 'S-3', name: 'Three for ten', quantity: 3, total: '10.00' }]);
  });

  it.each(PLATFORMS)('%s: accepts up to 1,000,000 of a line', (platform) => {
    const payload = resellerPayload(platform);
    const [line] = (payload[platform === 'custom' ? 'lines' : 'line_items'] as Array<Record<string, unknown>>);
    Object.assign(line!, { quantity: 1_000_000 }, platform === 'platform_b' && { total: '12500000.00' });
    expect(bench.adapters[platform].parseOrderWebhook(payload).lines[0]?.quantity).toBe(1_000_000);
  });

  it('platform_b: treats blank shipping fields as absent', () => {
    const payload = buildOrderPayload('platform_b', { id: 7, shippingAddress: null, lines: [] });
    expect(bench.adapters.platform_b.parseOrderWebhook(payload).shippingAddress).toBeNull();
  });

  const badOrders: Array<[Platform, string, (payload: Record<string, unknown>) => void, string]> = [
    ['platform_a', 'a numeric price', (p) => (lineOf(p, 'line_items').price = 12.5), 'line_items.0.price'],
    ['platform_a', 'a non-numeric id', (p) => (p.id = 'abc'), 'id'],
    ['platform_a', 'a malformed price', (p) => (lineOf(p, 'line_items').price = '12,50'), 'line_items.0.price'],
    ['platform_b', 'a fractional quantity', (p) => (lineOf(p, 'line_items').quantity = 1.5), 'line_items.0.quantity'],
    ['custom', 'lines missing', (p) => delete p.lines, 'lines'],
    ['custom', 'too many decimals', (p) => (lineOf(p, 'lines').unitPrice = '1.234'), 'lines.0.unitPrice'],
    ['custom', 'a negative price', (p) => (lineOf(p, 'lines').unitPrice = '-1.00'), 'lines.0.unitPrice'],
    ['platform_a', 'a quantity of 1e21', (p) => (lineOf(p, 'line_items').quantity = 1e21), 'line_items.0.quantity'],
    ['platform_b', 'a quantity of 1e300', (p) => (lineOf(p, 'line_items').quantity = 1e300), 'line_items.0.quantity'],
    ['custom', 'a quantity of 2^53 + 2', (p) => (lineOf(p, 'lines').quantity = 2 ** 53 + 2), 'lines.0.quantity'],
    ['platform_a', 'a quantity over 1,000,000', (p) => (lineOf(p, 'line_items').quantity = 1_000_001), 'line_items.0.quantity'],
    ['platform_b', 'a zero quantity', (p) => (lineOf(p, 'line_items').quantity = 0), 'line_items.0.quantity'],
    ['platform_a', 'a price over the limit', (p) => (lineOf(p, 'line_items').price = '10000000000.01'), 'line_items.0.price'],
    ['platform_a', 'a price of 400 digits', (p) => (lineOf(p, 'line_items').price = '9'.repeat(400)), 'line_items.0.price'],
    ['custom', 'a numeric price of 1e300', (p) => (lineOf(p, 'lines').unitPrice = 1e300), 'lines.0.unitPrice'],
    ['platform_a', 'a line total over the limit', (p) => Object.assign(lineOf(p, 'line_items'), { price: '100000000.00', quantity: 101 }), 'line_items.0.quantity'],
    ['custom', 'a line total over the limit', (p) => Object.assign(lineOf(p, 'lines'), { unitPrice: '5000000000', quantity: 2_000 }), 'lines.0.quantity'],
    ['platform_b', 'a total over the limit', (p) => (lineOf(p, 'line_items').total = '8e+3.02'), 'line_items.0.total'],
    ['platform_b', 'a total of 10^13', (p) => (lineOf(p, 'line_items').total = '10000000000000'), 'line_items.0.total'],
    ['platform_b', 'a float price of 1e300 without a total', (p) => Object.assign(lineOf(p, 'line_items'), { price: 1e300, total: undefined }), 'line_items.0.price'],
    ['platform_a', 'an unknown currency', (p) => (p.currency = 'ABC'), 'currency'],
    ['custom', 'a currency in lower case that is no ISO code', (p) => (p.currency = 'xyz'), 'currency'],
  ];

  it.each(badOrders)('%s: rejects %s', (platform, _, spoil, path) => {
    const payload = resellerPayload(platform);
    spoil(payload);
    const error = payloadError(() => bench.adapters[platform].parseOrderWebhook(payload));
    expect(error.path).toBe(path);
    expect(error.message).toContain(path);
  });

  const customItems: Array<[Platform, (payload: Record<string, unknown>) => void]> = [
    ['platform_a', (p) => Object.assign(lineOf(p, 'line_items'), { sku: null, vendor: null })],
    ['platform_b', (p) => Object.assign(lineOf(p, 'line_items'), { sku: null, meta_data: [] })],
    ['custom', (p) => Object.assign(lineOf(p, 'lines'), { sku: null, vendor: null })],
  ];

  it.each(customItems)('%s: keeps a custom line item without sku or vendor, unroutable', (platform, strip) => {
    const payload = resellerPayload(platform);
    strip(payload);
    expect(bench.adapters[platform].parseOrderWebhook(payload).lines[0]).toMatchObject({ sku: '', vendor: '' });
  });

  it.each(PLATFORMS)('%s: rejects a body that is not an order', (platform) => {
    expect(payloadError(() => bench.adapters[platform].parseOrderWebhook('hello')).message).toContain(platform);
  });
});

describe('parseFulfillmentWebhook', () => {
  it('platform_a: merges singular and plural tracking fields without duplicates', () => {
    const payload = {
      ...buildFulfillmentPayload('platform_a', {
        orderId: 450789469,
        fulfillmentId: 255858046,
        trackingNumbers: ['1Z001', '1Z002'],
        trackingUrls: ['https://track.example/1Z001'],
        company: 'UPS',
      }),
      tracking_number: '1Z001',
      tracking_url: 'https://track.example/1Z001',
      extra_field: { ignored: true },
    };
    expect(bench.adapters.platform_a.parseFulfillmentWebhook(payload)).toEqual({
      sourceOrderId: '450789469',
      fulfillmentId: '255858046',
      tracking: { numbers: ['1Z001', '1Z002'], urls: ['https://track.example/1Z001'], company: 'UPS' },
    });
  });

  it.each(['platform_b', 'custom'] as const)('%s: reads the tracking without a fulfillment id', (platform) => {
    const payload = buildFulfillmentPayload(platform, {
      orderId: platform === 'custom' ? 'ord_1' : 1001,
      trackingNumbers: ['1Z001'],
      trackingUrls: ['https://track.example/1Z001'],
      company: 'UPS',
    });
    expect(bench.adapters[platform].parseFulfillmentWebhook(payload)).toEqual({
      sourceOrderId: platform === 'custom' ? 'ord_1' : '1001',
      fulfillmentId: null,
      tracking: { numbers: ['1Z001'], urls: ['https://track.example/1Z001'], company: 'UPS' },
    });
  });

  it.each(['platform_a', 'platform_b', 'custom'] as const)('%s: drops a tracking link of another scheme than http(s), keeps one without a scheme', (platform) => {
    const payload = buildFulfillmentPayload(platform, {
      orderId: platform === 'custom' ? 'ord_1' : 1001,
      ...(platform === 'platform_a' && { fulfillmentId: 7 }),
      trackingNumbers: ['1Z001'],
      trackingUrls: platform === 'platform_b' ? ['javascript:alert(document.cookie)'] : ['JavaScript:alert(1)', 'data:text/html,x', 'https://track.example/1Z001', 'track.example/1Z001'],
    });
    const { urls } = bench.adapters[platform].parseFulfillmentWebhook(payload)!.tracking;
    expect(urls).toEqual(platform === 'platform_b' ? [] : ['https://track.example/1Z001', 'track.example/1Z001']);
  });

  it.each([
    ['platform_a', { id: 1, tracking_numbers: ['1Z'] }, 'order_id'],
    ['platform_b', { order_id: 'twelve', tracking_number: '1Z' }, 'order_id'],
    ['custom', { orderId: 'ord_1', trackingNumbers: '1Z' }, 'trackingNumbers'],
  ] as const)('%s: rejects an invalid fulfillment', (platform, payload, path) => {
    expect(payloadError(() => bench.adapters[platform].parseFulfillmentWebhook(payload)).path).toBe(path);
  });
});

describe('sandbox control API and webhooks', () => {
  let receiver: Server;
  let receiverUrl: string;
  const received: Array<{ headers: Record<string, unknown>; body: Buffer }> = [];

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({ headers: request.headers, body: Buffer.concat(chunks) });
        response.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;
  });

  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

  it('injects faults and reports orders over HTTP', async () => {
    const store = newStore('platform_a');
    const control = `${bench.sandbox.url}/_sandbox/stores/${store.shopDomain}`;
    const faults = await fetch(`${control}/faults`, { method: 'POST', body: JSON.stringify({ failNext: 1 }) });
    expect(faults.status).toBe(204);
    await platformError(bench.adapters.platform_a.createOrder(store, supplierOrder, 'k'), store);
    await bench.adapters.platform_a.createOrder(store, supplierOrder, 'k');
    const orders = (await (await fetch(`${control}/orders`)).json()) as unknown[];
    expect(orders).toHaveLength(1);
  });

  it('posts signed webhooks with the platform headers', async () => {
    const payload = resellerPayload('platform_a');
    const response = await fetch(`${bench.sandbox.url}/_sandbox/webhooks`, {
      method: 'POST',
      body: JSON.stringify({
        targetUrl: receiverUrl,
        shopDomain: 'shop.example',
        secret: 'whsec',
        topic: 'orders/create',
        payload,
        webhookId: 'delivery-1',
      }),
    });
    expect(await response.json()).toEqual({ status: 200, body: { ok: true }, webhookId: 'delivery-1' });
    const [delivery] = received;
    expect(delivery?.headers).toMatchObject({
      'x-platform-shop-domain': 'shop.example',
      'x-platform-topic': 'orders/create',
      'x-platform-webhook-id': 'delivery-1',
      'content-type': 'application/json',
    });
    const signature = String(delivery?.headers['x-platform-hmac-sha256']);
    expect(verifySignature(delivery?.body ?? Buffer.alloc(0), 'whsec', signature)).toBe(true);
    expect(JSON.parse(String(delivery?.body))).toEqual(payload);
  });
});

function lineOf(payload: Record<string, unknown>, key: string): Record<string, unknown> {
  const [line] = payload[key] as Array<Record<string, unknown>>;
  if (line === undefined) throw new Error(`payload has no ${key}`);
  return line;
}

describe("createOrder's supplier lines (kept for cancellations, issue 23)", () => {
  it('are the lines of the create answer with the supplier\'s own ids on platform_a and platform_b; custom\'s answer gives none', async () => {
    for (const platform of ['platform_a', 'platform_b'] as const) {
      const store = newStore(platform);
      const created = await bench.adapters[platform].createOrder(store, supplierOrder, `lines-${platform}`);
      const [received] = bench.sandbox.ordersFor(store.shopDomain);
      const lineItems = (received!.order as { line_items: { id: number; sku: string; quantity: number }[] }).line_items;
      expect(created.lines).toEqual(lineItems.map((line) => ({ lineId: String(line.id), sku: line.sku, quantity: line.quantity })));
      expect(created.lines?.map((line) => [line.sku, line.quantity])).toEqual([['MUG-1', 2], ['TEE-2', 1]]);
    }
    const custom = await bench.adapters.custom.createOrder(newStore('custom'), supplierOrder, 'lines-custom');
    expect(custom.lines ?? null).toBeNull();
  });

  it('are null, never a failed attempt, when the answer does not give every line an id and a SKU the service can keep', () => {
    expect(createdLines.parse([{ id: 7, sku: 'A', quantity: 1 }, { id: '8', sku: null, quantity: 2 }])).toEqual([
      { lineId: '7', sku: 'A', quantity: 1 },
      { lineId: '8', sku: '', quantity: 2 },
    ]);
    for (const answer of [undefined, null, 'lines', [{ sku: 'A', quantity: 1 }], [{ id: 'x\u0000', sku: 'A', quantity: 1 }], [{ id: 1, sku: 'A\u0000', quantity: 1 }], [{ id: 1, sku: '\uD800', quantity: 1 }], [{ id: 1, sku: 'A', quantity: -1 }]]) {
      expect(createdLines.parse(answer)).toBeNull();
    }
  });
});
