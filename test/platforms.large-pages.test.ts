/**
 * A list page over the list-answer bound (LIST_PAGE_MAX_BYTES, 8 MiB): a supplier or storefront whose
 * orders are large (long notes, many lines: 250 platform_a orders of 40 KB) answers every full page
 * with more than the bound. The answer is cut at the bound and the same page was asked again, the
 * same size, at every run: reconciliation and the divergence watch failed at that page for ever (the
 * watermark never moved, no order after it was ever routed or watched). The page is now read again
 * with half as many entries, down to one, and the list goes on with the smaller size.
 */
import { describe, expect, it } from 'vitest';
import { PLATFORMS } from '../src/orders/types.ts';
import type { PlatformAdapter, StoreConnection } from '../src/platforms/index.ts';
import { LIST_PAGE_MAX_BYTES } from '../src/platforms/http.ts';
import type { ListedOrder, UpdatedOrder } from '../src/platforms/types.ts';
import type { JsonObject } from './sandbox/server.ts';
import { adapterBench } from './support/adapters.ts';
import { bigOrder, FULL_PAGE } from './support/big-orders.ts';

const bench = adapterBench({ name: 'large-pages', timeoutMs: 10_000 });
const { newStore } = bench;

const T0 = Date.parse('2026-11-20T08:00:00.000Z');

/** A full page of the store's large orders and ten more, created a second apart from T0. */
function seedLargeOrders(store: StoreConnection): JsonObject[] {
  const orders = Array.from({ length: FULL_PAGE[store.platform] + 10 }, (_, index) => bigOrder(store.platform, index + 1, new Date(T0 + (index + 1) * 1000)));
  for (const order of orders) bench.sandbox.seedOrder(store.shopDomain, store.platform, order);
  // The premise: a page of the list's normal size is over the bound.
  expect(JSON.stringify(orders.slice(0, FULL_PAGE[store.platform])).length).toBeGreaterThan(LIST_PAGE_MAX_BYTES);
  return orders;
}

/** The page sizes the store's lists were asked for, in order (`limit`, platform_b's `per_page`). */
const sizesAsked = (store: StoreConnection) =>
  bench.sandbox.requestsFor(store.shopDomain).map((request) => {
    const query = new URLSearchParams(request.path.split('?')[1] ?? '');
    return Number(query.get('limit') ?? query.get('per_page'));
  });

describe('a list page over the list-answer bound is read again with fewer orders', () => {
  it.each(PLATFORMS)('%s: listOrders (reconciliation) lists every order once', async (platform) => {
    const store = newStore(platform);
    const orders = seedLargeOrders(store);

    const listed: ListedOrder[] = [];
    for await (const page of bench.adapters[platform].listOrders(store, new Date(T0))) listed.push(...page);

    expect(listed.map((order) => order.externalOrderId)).toEqual(orders.map((order) => String(order.id)));
    expect(listed.every((order) => !('invalid' in order.order))).toBe(true);
    // The first answer was cut at the bound and the page asked again smaller; the rest of the list kept the smaller size.
    const sizes = sizesAsked(store);
    expect(sizes[0]).toBe(FULL_PAGE[platform]);
    expect(sizes.slice(1).every((size) => size < FULL_PAGE[platform])).toBe(true);
  }, 60_000);

  it.each(PLATFORMS)('%s: listUpdatedOrders (the divergence watch) lists every order once', async (platform) => {
    const store = newStore(platform);
    const orders = seedLargeOrders(store);

    const listed: UpdatedOrder[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<PlatformAdapter['listUpdatedOrders']>> = await bench.adapters[platform].listUpdatedOrders(store, new Date(T0), cursor);
      listed.push(...page.orders);
      cursor = page.next;
    } while (cursor !== null);

    expect(listed.map((order) => order.externalOrderId).sort()).toEqual(orders.map((order) => String(order.id)).sort());
    const sizes = sizesAsked(store);
    expect(sizes[0]).toBe(FULL_PAGE[platform]);
    expect(sizes.slice(1).every((size) => size < FULL_PAGE[platform])).toBe(true);
  }, 60_000);

  it('platform_b: a page past the first of one second, read again smaller, goes on from the same order', async () => {
    const store = newStore('platform_b');
    // 100 small orders, then 150 large ones, all created in the same second: paged by number within it.
    const second = new Date(T0 + 5_000);
    const orders = [
      ...Array.from({ length: 100 }, (_, index) => bench.sandbox.buildOrderPayload('platform_b', { id: index + 1, createdAt: second.toISOString(), lines: [{ sku: 'S', title: 'T', vendor: 'Acme', quantity: 1, price: '1.00' }] })),
      ...Array.from({ length: 150 }, (_, index) => bigOrder('platform_b', 101 + index, second)),
    ];
    for (const order of orders) bench.sandbox.seedOrder(store.shopDomain, 'platform_b', order);

    const listed: ListedOrder[] = [];
    for await (const page of bench.adapters.platform_b.listOrders(store, new Date(T0))) listed.push(...page);

    expect(listed.map((order) => order.externalOrderId)).toEqual(orders.map((order) => String(order.id)));
    const asked = bench.sandbox.requestsFor(store.shopDomain).map((request) => new URLSearchParams(request.path.split('?')[1]));
    // From the second before that one (its first page, then by number): page 2 of 100 (orders 101-200)
    // was too large, and page 3 of 50 is its start (order 101).
    expect(asked.slice(1, 4).map((query) => [query.get('page'), query.get('per_page')])).toEqual([['1', '100'], ['2', '100'], ['3', '50']]);
  }, 60_000);

  it('an order whose own entry is over the bound still fails the listing, once a page of one cannot be read', async () => {
    const store = newStore('custom');
    bench.sandbox.setFaults(store.shopDomain, { oversizedBodyNext: 100, oversizedBodyBytes: LIST_PAGE_MAX_BYTES + 1 });
    const listing = (async () => {
      for await (const _page of bench.adapters.custom.listOrders(store, new Date(T0))) void _page;
    })();
    await expect(listing).rejects.toThrow(`a body over ${LIST_PAGE_MAX_BYTES} bytes`);
    // 100, 50, 25, 12, 6, 3, 1: each asked once.
    expect(bench.sandbox.requestsFor(store.shopDomain).map((request) => new URLSearchParams(request.path.split('?')[1]).get('limit'))).toEqual(['100', '50', '25', '12', '6', '3', '1']);
  });
});
