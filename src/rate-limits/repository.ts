import { sql } from 'kysely';
import type { Db } from '../db/sql.ts';
import { sha256Hex } from '../shared/secrets.ts';

/** A key's count in its current window, and when the window ends (epoch milliseconds). */
export interface WindowCount {
  key: string;
  hits: number;
  resetsAtMs: number;
}

interface CountRow {
  key: string;
  hits: number;
  resets_ms: number | string;
}

/** The longest key stored as it is (the column holds 300 characters). */
const MAX_PLAIN_KEY_LENGTH = 200;

/**
 * The key as stored: a longer one (a 255-character shop domain with an IPv6 client's prefix, an
 * address a proxy passed on) by its digest, so no key makes the statement fail (a 500, and a
 * failure never counted, so its budget never ran out). Every caller's key starts with a word, never
 * with '#'.
 */
const storedKey = (key: string): string => (key.length <= MAX_PLAIN_KEY_LENGTH ? key : `#${sha256Hex(key)}`);

/** The counts as the caller named their keys. */
function countsOf(rows: CountRow[], keys: string[]): WindowCount[] {
  const named = new Map(keys.map((key) => [storedKey(key), key]));
  return rows.map((row) => ({ key: named.get(row.key) ?? row.key, hits: row.hits, resetsAtMs: Number(row.resets_ms) }));
}

/**
 * Every statement on rate_limit_counters: fixed-window counters shared by every process. A key's
 * window starts at its first hit and lasts `windowMs`; a hit after it starts a new one. Times are
 * PostgreSQL's clock, so processes agree.
 */
export class RateLimitRepository {
  constructor(private readonly db: Db) {}

  /** Counts one hit on each key, in one statement. */
  async hit(keys: string[], windowMs: number): Promise<WindowCount[]> {
    if (keys.length === 0) return [];
    const { rows } = await sql<CountRow>`
      with clock as materialized (select clock_timestamp() as t)
      insert into rate_limit_counters as c (key, hits, resets_at)
      select k, 1, (select t from clock) + ${windowMs} * interval '1 millisecond' from unnest(${keys.map(storedKey)}::text[]) as k
      on conflict (key) do update set
        hits = case when c.resets_at <= (select t from clock) then 1 else c.hits + 1 end,
        resets_at = case when c.resets_at <= (select t from clock) then excluded.resets_at else c.resets_at end
      returning c.key, c.hits, extract(epoch from c.resets_at) * 1000 as resets_ms`.execute(this.db);
    return countsOf(rows, keys);
  }

  /** The keys' counts in their current windows; a key without one is left out. */
  async current(keys: string[]): Promise<WindowCount[]> {
    if (keys.length === 0) return [];
    const { rows } = await sql<CountRow>`
      select key, hits, extract(epoch from resets_at) * 1000 as resets_ms from rate_limit_counters
      where key = any(${keys.map(storedKey)}::text[]) and resets_at > clock_timestamp()`.execute(this.db);
    return countsOf(rows, keys);
  }

  /** Takes back one hit (a request that turned out not to count). */
  async unhit(key: string): Promise<void> {
    await sql`update rate_limit_counters set hits = greatest(hits - 1, 0) where key = ${storedKey(key)} and resets_at > clock_timestamp()`.execute(this.db);
  }

  async reset(key: string): Promise<void> {
    await sql`delete from rate_limit_counters where key = ${storedKey(key)}`.execute(this.db);
  }

  /** Deletes windows that ended, so the table holds only the current ones. */
  async purgeExpired(): Promise<void> {
    await sql`delete from rate_limit_counters where resets_at < clock_timestamp()`.execute(this.db);
  }
}

/** Windows that ended are deleted after this many hits counted by one process. */
const PURGE_EVERY_HITS = 1_000;

/** Counters shared by every process (RateLimitRepository), keeping the table to the current windows. */
export class SharedCounters {
  readonly #repository: RateLimitRepository;
  #hitsSincePurge = 0;

  constructor(db: Db) {
    this.#repository = new RateLimitRepository(db);
  }

  hit(keys: string[], windowMs: number): Promise<WindowCount[]> {
    this.#hitsSincePurge += keys.length;
    if (this.#hitsSincePurge >= PURGE_EVERY_HITS) {
      this.#hitsSincePurge = 0;
      // Best effort: a purge that fails only leaves ended windows for the next one.
      this.#repository.purgeExpired().catch(() => undefined);
    }
    return this.#repository.hit(keys, windowMs);
  }

  current(keys: string[]): Promise<WindowCount[]> {
    return this.#repository.current(keys);
  }

  unhit(key: string): Promise<void> {
    return this.#repository.unhit(key);
  }

  reset(key: string): Promise<void> {
    return this.#repository.reset(key);
  }
}
