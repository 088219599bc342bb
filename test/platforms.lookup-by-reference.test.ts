/**
 * findOrderByReference (an order whose creation answer was lost, found again by the reference the
 * service attached: order-changes.md "In doubt", and a late manual retry) reads the supplier's order
 * list, page by page. A list page is bounded like every list page (LIST_PAGE_MAX_BYTES, 8 MiB), not
 * like one order's answer (1 MiB): a supplier's full page of 250 platform_a orders (100 on the others)
 * of realistic size is over 1 MiB, and the lookup then failed every time, so a cancellation in doubt
 * could never find the order to cancel (it died, and the supplier shipped) and a retried job could
 * never be placed.
 */
import { describe, expect, it } from 'vitest';
import { PLATFORMS, type Platform } from '../src/orders/types.ts';
import type { StoreConnection } from '../src/platforms/index.ts';
import { ANSWER_MAX_BYTES, LIST_PAGE_MAX_BYTES } from '../src/platforms/http.ts';
import { type JsonObject, buildOrderPayload } from './sandbox/server.ts';
import { adapterBench } from './support/adapters.ts';
import { bigOrder, FULL_PAGE } from './support/big-orders.ts';

const bench = adapterBench({ name: 'lookup', timeoutMs: 10_000 });
const { newStore } = bench;

const PAGE = { platform_a: 250, platform_b: 100, custom: 100 } as const;
const T0 = Date.parse('2026-11-20T08:00:00.000Z');

/** An order of a busy supplier: 40 lines with long titles (about 15 KB, as real orders often are). */
function bulkyOrder(platform: Platform, n: number, reference: string | null): JsonObject {
  const id = platform === 'custom' ? `ord_${n}` : n;
  const lines = Array.from({ length: 40 }, (_, index) => ({ sku: `SKU-${index}`, title: `Item ${index} ${'x'.repeat(200)}`, vendor: 'Acme', quantity: 1, price: '1.00' }));
  const order = buildOrderPayload(platform, { id, lines, createdAt: new Date(T0 + n * 1000).toISOString() });
  if (reference === null) return order;
  if (platform === 'platform_a') return { ...order, note_attributes: [{ name: 'sync_reference', value: reference }] };
  if (platform === 'platform_b') return { ...order, meta_data: [{ key: 'sync_reference', value: reference }] };
  return { ...order, reference };
}

describe('findOrderByReference on a busy supplier', () => {
  it.each(PLATFORMS)('%s: finds the order on the second page when a full page is over 1 MiB', async (platform) => {
    const store = newStore(platform);
    const others = PAGE[platform] + 5;
    for (let n = 1; n <= others; n++) bench.sandbox.seedOrder(store.shopDomain, platform, bulkyOrder(platform, n, null));
    const mine = bulkyOrder(platform, others + 1, 'sj_lost_answer');
    bench.sandbox.seedOrder(store.shopDomain, platform, mine);

    const found = await bench.adapters[platform].findOrderByReference(store, 'sj_lost_answer', new Date(T0), 'fail');
    expect(found).toBe(String(mine.id));
    // The pages read were each over the bound on one answer: the list page's bound applies.
    expect(JSON.stringify(Array.from({ length: PAGE[platform] }, (_, n) => bulkyOrder(platform, n + 1, null))).length).toBeGreaterThan(ANSWER_MAX_BYTES);
  }, 30_000);
});

/** A small order (the lookup's page count, not its size, is what this is about). */
function smallOrder(platform: Platform, n: number, reference: string | null): JsonObject {
  const id = platform === 'custom' ? `ord_${n}` : n;
  const order = buildOrderPayload(platform, { id, lines: [{ sku: 'S', title: 'T', vendor: 'Acme', quantity: 1, price: '1.00' }], createdAt: new Date(T0 + n * 100).toISOString() });
  if (reference === null) return order;
  if (platform === 'platform_a') return { ...order, note_attributes: [{ name: 'sync_reference', value: reference }] };
  if (platform === 'platform_b') return { ...order, meta_data: [{ key: 'sync_reference', value: reference }] };
  return { ...order, reference };
}

describe('findOrderByReference past its page bound', () => {
  /**
   * A flash sale's backlog: the job was created long before its attempt placed the order (and lost
   * the answer), and the supplier got thousands of orders in between, the service's own among them.
   * The lookup reads at most 20 full pages of orders; stopping there is no proof the order does not exist, and the
   * cancellation reads null as "never placed" (`not_placed`), so the supplier ships a cancelled order
   * and nobody is told.
   */
  it.each(PLATFORMS)('%s: never answers "not found" when it stopped before the end of the list', async (platform) => {
    const store = newStore(platform);
    const before = 20 * PAGE[platform] + 1;
    for (let n = 1; n <= before; n++) bench.sandbox.seedOrder(store.shopDomain, platform, smallOrder(platform, n, null));
    const mine = smallOrder(platform, before + 1, 'sj_backlogged');
    bench.sandbox.seedOrder(store.shopDomain, platform, mine);

    const outcome = await bench.adapters[platform].findOrderByReference(store, 'sj_backlogged', new Date(T0), 'fail').then(
      (id) => id,
      (error: unknown) => error,
    );
    // Found, or a failure the caller retries and reports; never null while the order is there.
    if (typeof outcome === 'string') expect(outcome).toBe(String(mine.id));
    else expect(outcome).toBeInstanceOf(Error);
    // A caller that asks for it (a late job retry, src/sync-jobs/attempt.ts) still gets null there.
    await expect(bench.adapters[platform].findOrderByReference(store, 'sj_backlogged', new Date(T0), 'not_found')).resolves.toBeNull();
  }, 60_000);
});

describe('findOrderByReference on platform_b without its paging totals', () => {
  /**
   * listOrders already reads a list without X-WP-TotalPages (a proxy may drop it) as going on until
   * a short page; the lookup took a missing header for "one page" and answered "not found" after it.
   */
  it('reads on past a full page when the answer has no X-WP-TotalPages', async () => {
    const store = newStore('platform_b');
    bench.sandbox.setFaults(store.shopDomain, { omitListTotals: true });
    const before = PAGE.platform_b + 20;
    for (let n = 1; n <= before; n++) bench.sandbox.seedOrder(store.shopDomain, 'platform_b', smallOrder('platform_b', n, null));
    const mine = smallOrder('platform_b', before + 1, 'sj_second_page');
    bench.sandbox.seedOrder(store.shopDomain, 'platform_b', mine);

    const found = await bench.adapters.platform_b.findOrderByReference(store, 'sj_second_page', new Date(T0), 'fail');
    expect(found).toBe(String(mine.id));
  });
});

/** `order` carrying the service's reference, where each platform keeps it. */
function withReference(platform: Platform, order: JsonObject, reference: string): JsonObject {
  if (platform === 'platform_a') return { ...order, note_attributes: [{ name: 'sync_reference', value: reference }] };
  if (platform === 'platform_b') return { ...order, meta_data: [{ key: 'sync_reference', value: reference }] };
  return { ...order, reference };
}

/** The page sizes the store's lists were asked for, in order (`limit`, platform_b's `per_page`). */
const sizesAsked = (store: StoreConnection) =>
  bench.sandbox.requestsFor(store.shopDomain).map((request) => {
    const query = new URLSearchParams(request.path.split('?')[1] ?? '');
    return Number(query.get('limit') ?? query.get('per_page'));
  });

describe('findOrderByReference on a supplier whose full page is over the list-answer bound', () => {
  /**
   * Since 1d1d0b8 the lists read a page over LIST_PAGE_MAX_BYTES (8 MiB) again with half as many
   * orders; the lookup did not, so on a supplier whose orders are large (long notes, many lines) every
   * lookup failed at its first page: a cancellation in doubt died without finding the order to cancel
   * (the supplier shipped it), a retried job could never check whether it was placed already.
   */
  it.each(PLATFORMS)('%s: finds the order past a first page too large to read whole', async (platform) => {
    const store = newStore(platform);
    const others = Array.from({ length: FULL_PAGE[platform] + 10 }, (_, index) => bigOrder(platform, index + 1, new Date(T0 + (index + 1) * 1000)));
    for (const order of others) bench.sandbox.seedOrder(store.shopDomain, platform, order);
    const mine = withReference(platform, bigOrder(platform, others.length + 1, new Date(T0 + (others.length + 1) * 1000)), 'sj_large_pages');
    bench.sandbox.seedOrder(store.shopDomain, platform, mine);
    // The premise: a page of the lookup's normal size is over the bound.
    expect(JSON.stringify(others.slice(0, FULL_PAGE[platform])).length).toBeGreaterThan(LIST_PAGE_MAX_BYTES);

    await expect(bench.adapters[platform].findOrderByReference(store, 'sj_large_pages', new Date(T0), 'fail')).resolves.toBe(String(mine.id));
    // The first answer was cut at the bound and the page asked again smaller; the lookup went on with the smaller size.
    const sizes = sizesAsked(store);
    expect(sizes[0]).toBe(FULL_PAGE[platform]);
    expect(sizes.slice(1).every((size) => size < FULL_PAGE[platform])).toBe(true);
  }, 60_000);

  /**
   * Its bound counts the orders looked through (20 full pages' worth), not the pages: read a page of
   * one order at a time, the lookup does not stop after 20 orders.
   */
  it.each(PLATFORMS)('%s: read one order a page, it looks through as many orders as 20 full pages hold', async (platform) => {
    const store = newStore(platform);
    const before = 30;
    for (let n = 1; n <= before; n++) bench.sandbox.seedOrder(store.shopDomain, platform, smallOrder(platform, n, null));
    const mine = smallOrder(platform, before + 1, 'sj_one_a_page');
    bench.sandbox.seedOrder(store.shopDomain, platform, mine);
    // Every size but one order is answered over the bound (250 or 100, then halved down to 3).
    const oversized = Math.floor(Math.log2(FULL_PAGE[platform]));
    bench.sandbox.setFaults(store.shopDomain, { oversizedBodyNext: oversized, oversizedBodyBytes: LIST_PAGE_MAX_BYTES + 1 });

    await expect(bench.adapters[platform].findOrderByReference(store, 'sj_one_a_page', new Date(T0), 'fail')).resolves.toBe(String(mine.id));
    const sizes = sizesAsked(store);
    expect(sizes.slice(oversized).every((size) => size === 1)).toBe(true);
    expect(sizes.length).toBe(oversized + before + 1);
  }, 60_000);

  it('read one order a page, it stops after 100 reads and says so, rather than read for an hour', async () => {
    const store = newStore('custom');
    for (let n = 1; n <= 150; n++) bench.sandbox.seedOrder(store.shopDomain, 'custom', smallOrder('custom', n, null));
    bench.sandbox.seedOrder(store.shopDomain, 'custom', smallOrder('custom', 151, 'sj_far_on'));
    bench.sandbox.setFaults(store.shopDomain, { oversizedBodyNext: 6, oversizedBodyBytes: LIST_PAGE_MAX_BYTES + 1 });

    await expect(bench.adapters.custom.findOrderByReference(store, 'sj_far_on', new Date(T0), 'fail')).rejects.toThrow('was not among the first 94 orders created since the job (100 reads), and the list goes on; not looked further');
    expect(bench.sandbox.requestsFor(store.shopDomain)).toHaveLength(100);
    bench.sandbox.clearFaults(store.shopDomain);
    bench.sandbox.setFaults(store.shopDomain, { oversizedBodyNext: 6, oversizedBodyBytes: LIST_PAGE_MAX_BYTES + 1 });
    await expect(bench.adapters.custom.findOrderByReference(store, 'sj_far_on', new Date(T0), 'not_found')).resolves.toBeNull();
  }, 60_000);

  it('an order whose own entry is over the bound still fails the lookup, once a page of one cannot be read', async () => {
    const store = newStore('custom');
    bench.sandbox.setFaults(store.shopDomain, { oversizedBodyNext: 100, oversizedBodyBytes: LIST_PAGE_MAX_BYTES + 1 });
    await expect(bench.adapters.custom.findOrderByReference(store, 'sj_never', new Date(T0), 'not_found')).rejects.toThrow(`a body over ${LIST_PAGE_MAX_BYTES} bytes`);
    expect(sizesAsked(store)).toEqual([100, 50, 25, 12, 6, 3, 1]);
  });
});
