/**
 * platform_b's lists followed by time (src/platforms/time-paging.ts), against a list that changes
 * while it is read, the way the platform answers `after`/`modified_after` with `page` and `per_page`:
 * whole-second times, exclusive filter, ties in the order the platform likes.
 */
import { describe, expect, it } from 'vitest';
import { firstPosition, followByTime, type TimePosition } from '../src/platforms/time-paging.ts';

const T0 = Date.parse('2026-11-20T08:00:00.000Z');
type Order = { id: string; time: Date };
const order = (id: string, second: number): Order => ({ id, time: new Date(T0 + second * 1000) });

/** One page as the platform answers it, and whether it is the last (its X-WP-TotalPages). */
function answer(orders: Order[], position: TimePosition, perPage: number): { listed: Order[]; last: boolean } {
  const matching = orders.filter((o) => o.time.getTime() > position.after).sort((a, b) => a.time.getTime() - b.time.getTime());
  return { listed: matching.slice((position.page - 1) * perPage, position.page * perPage), last: position.page >= Math.ceil(matching.length / perPage) };
}

/** Reads the whole list, calling `meanwhile` after each page; the ids listed, in order. */
function readAll(orders: Order[], perPage: number, meanwhile: (page: number) => void = () => {}): string[] {
  const ids: string[] = [];
  let position: TimePosition | null = firstPosition(new Date(T0));
  for (let page = 1; position !== null && page < 100; page++) {
    const { listed, last } = answer(orders, position, perPage);
    const followed: { fresh: Order[]; next: TimePosition | null } = followByTime(position, listed, (o) => o, last);
    ids.push(...followed.fresh.map((o) => o.id));
    meanwhile(page);
    position = followed.next;
  }
  return ids;
}

describe('followByTime', () => {
  it('skips nothing when an order listed already leaves the list while it is read (trashed)', () => {
    const orders = [order('a', 10), order('b', 20), order('c', 30), order('d', 40), order('e', 50)];
    const ids = readAll(orders, 2, (page) => {
      if (page === 1) orders.splice(0, 1);
    });
    expect(ids).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('lists every order of a crowded second once, across pages of that second', () => {
    const orders = [order('a', 10), ...['b', 'c', 'd', 'e', 'f'].map((id) => order(id, 20)), order('g', 30)];
    expect(readAll(orders, 2)).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  });

  it('lists again an order changed while the list is read, with its new time', () => {
    const orders = [order('a', 10), order('b', 20), order('c', 30)];
    const ids = readAll(orders, 2, (page) => {
      if (page === 1) orders[0] = order('a', 40);
    });
    expect(ids).toEqual(['a', 'b', 'c', 'a']);
  });
});
