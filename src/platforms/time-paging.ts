/**
 * platform_b's lists (orders created after, or changed after, a time) followed by the time of the
 * last order listed rather than by page number. Paging by number skips an order whenever one listed
 * before it leaves its place: an order that changes moves to the end of the changed list, and one
 * deleted or trashed leaves the created list; every later order moves back one place, and the one
 * that moved back onto a page already read is never listed. Asking again from the second before the
 * last order's time (times have whole seconds and the filters are exclusive, so orders of that same
 * second are not skipped), leaving out the ids already listed at that second, cannot skip one. Only
 * a full page within a single second goes on by page number.
 */

/** Where a list goes on: its filter time (a whole second, in ms), its page, and the ids listed already in the second after it. */
export interface TimePosition {
  after: number;
  page: number;
  seen: string[];
}

const wholeSecond = (ms: number) => Math.floor(ms / 1000) * 1000;

/** The first page's position: everything after `since` (to the whole second, as the platform compares). */
export function firstPosition(since: Date): TimePosition {
  return { after: wholeSecond(since.getTime()), page: 1, seen: [] };
}

/**
 * What of a page is new (the ids listed already in the list's first second left out) and where the
 * list goes on: null when this page was its last.
 */
export function followByTime<T>(position: TimePosition, listed: T[], orderOf: (entry: T) => { id: string; time: Date }, last: boolean): { fresh: T[]; next: TimePosition | null } {
  const firstSecond = position.after + 1000;
  const seen = new Set(position.seen);
  const secondOf = (entry: T) => wholeSecond(orderOf(entry).time.getTime());
  // An id listed before but changed since is listed again, with its new time.
  const fresh = listed.filter((entry) => !(seen.has(orderOf(entry).id) && secondOf(entry) === firstSecond));
  const lastEntry = listed.at(-1);
  if (last || lastEntry === undefined) return { fresh, next: null };
  const lastSecond = secondOf(lastEntry);
  const atLastSecond = listed.filter((entry) => secondOf(entry) === lastSecond).map((entry) => orderOf(entry).id);
  const next =
    lastSecond > firstSecond
      ? { after: lastSecond - 1000, page: 1, seen: atLastSecond }
      : // The whole page is in the list's first second: the next page of the same list.
        { after: position.after, page: position.page + 1, seen: [...new Set([...position.seen, ...atLastSecond])] };
  return { fresh, next };
}

/**
 * The same place in the list read with pages of `to` entries rather than `from` (a page too large
 * read again smaller, src/platforms/listing.ts readShrinking): only a position past the first page
 * (a full page within one second) changes, to the page holding the first entry the old page would
 * have. It may start a little earlier; the entries listed again are among `seen`, and left out.
 */
export function atPageSize(position: TimePosition, from: number, to: number): TimePosition {
  if (position.page === 1 || from === to) return position;
  return { ...position, page: Math.floor(((position.page - 1) * from) / to) + 1 };
}
