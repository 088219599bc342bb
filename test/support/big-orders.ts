/** Orders large enough that a full list page of them is over the list-answer bound (LIST_PAGE_MAX_BYTES, 8 MiB). */
import type { Platform } from '../../src/orders/types.ts';
import { LIST_PAGE_MAX_BYTES } from '../../src/platforms/http.ts';
import { buildOrderPayload, type JsonObject } from '../sandbox/server.ts';

/** The page size the service asks each platform's lists for (its largest). */
export const FULL_PAGE = { platform_a: 250, platform_b: 100, custom: 100 } as const;

/** The platform's free-text field of an order (the customer's note), which the service does not read. */
const NOTE_FIELD = { platform_a: 'note', platform_b: 'customer_note', custom: 'note' } as const;

/**
 * An order with a long customer note: a full page of them (250 on platform_a, 100 on the others) is
 * about 8.5 MiB (platform_a's are about 36 KB, the others' about 90 KB, as a gift order's long message
 * and a marketplace's many attributes make them).
 */
export function bigOrder(platform: Platform, n: number, createdAt: Date, vendor = 'Acme'): JsonObject {
  const order = buildOrderPayload(platform, {
    id: platform === 'custom' ? `ord_${n}` : n,
    lines: [{ sku: 'BIG-1', title: 'Hamper', vendor, quantity: 1, price: '10.00' }],
    createdAt: createdAt.toISOString(),
  });
  const noteLength = Math.ceil((LIST_PAGE_MAX_BYTES * 1.06) / FULL_PAGE[platform]);
  return { ...order, [NOTE_FIELD[platform]]: `Happy birthday! ${'x'.repeat(noteLength)}` };
}
