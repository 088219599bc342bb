/**
 * listUpdatedOrders / listShipments of each adapter against the sandbox: the updated-since lists,
 * paged the way each platform pages, in the order of the updates, and every order read with its
 * reference, its cancellation and its shipments shaped as their fulfillments/create webhooks.
 */
import { describe, expect, it } from 'vitest';
import { fulfillmentKeys } from '../src/fulfillments/identity.ts';
import { PLATFORMS, type Platform } from '../src/orders/types.ts';
import { PlatformError, type PlatformAdapter, type StoreConnection } from '../src/platforms/index.ts';
import type { UpdatedOrder } from '../src/platforms/updated.ts';
import { buildOrderPayload } from './sandbox/server.ts';
import { adapterBench } from './support/adapters.ts';

const T0 = Date.parse('2026-11-20T08:00:00.000Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000);

const bench = adapterBench({ name: 'updated' });
const { newStore } = bench;

const orderId = (platform: Platform, n: number) => (platform === 'custom' ? `ord_${n}` : n);
const updatedField = { platform_a: 'updated_at', platform_b: 'date_modified_gmt', custom: 'updatedAt' } as const;
const formatted = (platform: Platform, date: Date) => (platform === 'platform_b' ? date.toISOString().slice(0, 19) : date.toISOString());

/** Seeds orders n = 1.. created at minute 0 and last updated at the given minutes. */
function seedUpdated(store: StoreConnection, minutes: number[]) {
  return minutes.map((minute, index) => {
    const n = index + 1;
    const payload = buildOrderPayload(store.platform, { id: orderId(store.platform, n), createdAt: at(0).toISOString(), lines: [{ sku: `S-${n}`, title: 'Item', vendor: 'Acme', quantity: 1, price: '10.00' }] });
    const reference = store.platform === 'platform_a' ? { note_attributes: [{ name: 'sync_reference', value: `job_${n}` }] } : store.platform === 'platform_b' ? { meta_data: [{ key: 'sync_reference', value: `job_${n}` }] } : { reference: `job_${n}` };
    return bench.sandbox.seedOrder(store.shopDomain, store.platform, { ...payload, ...reference, [updatedField[store.platform]]: formatted(store.platform, at(minute)) });
  });
}

async function listAll(adapter: PlatformAdapter, store: StoreConnection, since: Date): Promise<UpdatedOrder[][]> {
  const pages: UpdatedOrder[][] = [];
  let cursor: string | null = null;
  do {
    const page: Awaited<ReturnType<PlatformAdapter['listUpdatedOrders']>> = await adapter.listUpdatedOrders(store, since, cursor);
    pages.push(page.orders);
    cursor = page.next;
  } while (cursor !== null);
  return pages;
}

describe.each(PLATFORMS)('%s listUpdatedOrders', (platform) => {
  it('follows the paging across pages, in the order of the updates, from the time given', async () => {
    const store = newStore(platform);
    seedUpdated(store, [50, 10, 30, 40, 20, 1]);
    bench.sandbox.setListPageSize(store.shopDomain, 2);
    const pages = await listAll(bench.adapters[platform], store, at(5));
    // platform_b asks again from the second before each page's last change, which the next page shows again (and is left out).
    expect(pages.map((page) => page.length)).toEqual(platform === 'platform_b' ? [2, 1, 1, 1] : [2, 2, 1]);
    expect(pages.flat().map((order) => order.externalOrderId)).toEqual([2, 5, 3, 4, 1].map((n) => String(orderId(platform, n))));
    expect(pages.flat().map((order) => order.updatedAt.getTime())).toEqual([10, 20, 30, 40, 50].map((minute) => at(minute).getTime()));
    expect(pages.flat().map((order) => order.syncReference)).toEqual(['job_2', 'job_5', 'job_3', 'job_4', 'job_1']);
    const paths = bench.sandbox.requestsFor(store.shopDomain).map((request) => decodeURIComponent(request.path));
    expect(paths).toHaveLength(platform === 'platform_b' ? 4 : 3);
    const filter = { platform_a: 'updated_at_min=', platform_b: 'modified_after=', custom: 'updatedAfter=' }[platform];
    expect(paths[0]).toContain(filter);
    if (platform === 'platform_b') {
      expect(paths.map((path) => /[?&]modified_after=([^&]+)/.exec(path)?.[1])).toEqual([5, 20, 30, 40].map((minute, i) => new Date(at(minute).getTime() - (i === 0 ? 0 : 1000)).toISOString()));
      expect(paths.every((path) => /[?&]page=1(&|$)/.test(path))).toBe(true);
    }
    if (platform === 'platform_a') expect(paths[1]).toMatch(/page_info=/);
    if (platform === 'custom') expect(paths[1]).toMatch(/cursor=/);
  });

  it('a change moves the order to the end of the list, cancelled with its reason, and shows its shipment', async () => {
    const store = newStore(platform);
    seedUpdated(store, [1, 2]);
    const id = String(orderId(platform, 1));
    const [webhookBody] = bench.sandbox.shipOrder(store.shopDomain, platform, id, { trackingNumbers: ['TRK-U-1'], trackingUrls: ['https://t.example/1'], company: 'UPS' });
    bench.sandbox.cancelOrder(store.shopDomain, platform, String(orderId(platform, 2)));
    const orders = (await listAll(bench.adapters[platform], store, at(0))).flat();
    expect(orders.map((order) => order.externalOrderId)).toEqual([id, String(orderId(platform, 2))]);
    const [shipped, cancelled] = orders as [UpdatedOrder, UpdatedOrder];
    expect(cancelled).toMatchObject({ cancelled: true });
    expect(shipped.cancelled).toBe(false);
    const shipments = shipped.shipments ?? (await bench.adapters[platform].listShipments(store, id));
    if (platform === 'platform_b') expect(shipped.shipments).toBeNull();
    expect(shipments).toHaveLength(1);
    // The same identity as the webhook for that shipment: the watch and a late webhook are one fulfillment.
    const fromWebhook = bench.adapters[platform].parseFulfillmentWebhook(webhookBody)!;
    expect(fulfillmentKeys(shipments[0]!, undefined).dedupeKey).toBe(fulfillmentKeys(fromWebhook, undefined).dedupeKey);
    expect(shipments[0]!.tracking.numbers).toEqual(['TRK-U-1']);
  });

  it('a bad token is a non-retryable 401 whose message hides the token', async () => {
    const store = newStore(platform);
    const wrong = { ...store, accessToken: 'tok_wrong_updated_secret' };
    const error = await bench.adapters[platform].listUpdatedOrders(wrong, at(0), null).then(() => expect.fail('expected a failure'), (reason: unknown) => reason);
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({ retryable: false, status: 401 });
    expect((error as PlatformError).message).not.toContain(wrong.accessToken);
  });
});

describe('platform_b listUpdatedOrders, paged by the time of the last change', () => {
  it('an order that changes while the list is read skips no other order: it is listed again, at the end', async () => {
    const store = newStore('platform_b');
    seedUpdated(store, [10, 20, 30, 40, 50]);
    bench.sandbox.setListPageSize(store.shopDomain, 2);
    const listed: UpdatedOrder[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<PlatformAdapter['listUpdatedOrders']>> = await bench.adapters.platform_b.listUpdatedOrders(store, at(5), cursor);
      // The first order changes once the first page is read: by page number, order 3 would move back onto page 1 and never be listed.
      if (cursor === null) bench.sandbox.cancelOrder(store.shopDomain, 'platform_b', '1');
      listed.push(...page.orders);
      cursor = page.next;
    } while (cursor !== null);
    expect(listed.map((order) => order.externalOrderId)).toEqual(['1', '2', '3', '4', '5', '1']);
    expect(listed.at(-1)).toMatchObject({ cancelled: true });
  });

  it('orders changed in one second are all listed once, across pages of that second', async () => {
    const store = newStore('platform_b');
    seedUpdated(store, [10, 20, 20, 20, 20, 20, 30]);
    bench.sandbox.setListPageSize(store.shopDomain, 2);
    const orders = (await listAll(bench.adapters.platform_b, store, at(5))).flat();
    expect(orders.map((order) => order.externalOrderId)).toEqual(['1', '2', '3', '4', '5', '6', '7']);
  });
});

it('platform_a reads the cancel_reason; platform_b calls a refunded order cancelled', async () => {
  const a = newStore('platform_a');
  const [order] = seedUpdated(a, [1]);
  bench.sandbox.seedOrder(a.shopDomain, 'platform_a', { ...order!, cancelled_at: at(2).toISOString(), cancel_reason: 'inventory', updated_at: at(2).toISOString() });
  const [listedA] = (await listAll(bench.adapters.platform_a, a, at(0))).flat();
  expect(listedA).toMatchObject({ cancelled: true, cancelReason: 'inventory', status: 'cancelled' });
  const b = newStore('platform_b');
  const [orderB] = seedUpdated(b, [1]);
  bench.sandbox.seedOrder(b.shopDomain, 'platform_b', { ...orderB!, status: 'refunded', date_modified_gmt: formatted('platform_b', at(2)) });
  const [listedB] = (await listAll(bench.adapters.platform_b, b, at(0))).flat();
  expect(listedB).toMatchObject({ cancelled: true, cancelReason: 'refunded', status: 'refunded', shipments: [] });
});
