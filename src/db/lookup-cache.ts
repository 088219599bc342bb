import type { EntityManager, EventSubscriber, FlushEventArgs, TransactionEventArgs } from '@mikro-orm/core';
import type { Orm } from './orm.ts';

const CACHE_MAX_ENTRIES = 10_000;

/**
 * The order webhook's store look-ups (a reseller store by shop domain, with its decrypted webhook
 * secret; a reseller store's active source stores), each reused for `ttlMs`: at a steady stream
 * of orders they would otherwise cost two queries and a decryption per delivery. A change to any
 * store made through this process's ORM empties the cache when it is flushed and again when it
 * commits, and nothing is cached while such a change is uncommitted, so this process never acts on
 * a store it changed; a change made by another process (another ROLE=api instance) is seen within
 * `ttlMs`. A domain with no active store is never cached, so a new store is seen at once.
 */
export class StoreLookupCache implements EventSubscriber {
  readonly #entries = new Map<string, { value: Promise<unknown>; expiresAt: number }>();
  /** Entity managers that flushed a store change not committed yet. */
  readonly #uncommitted = new Set<EntityManager>();
  #generation = 0;

  /** `watched`: the entities (by class name) whose changes empty the cache. */
  constructor(
    private readonly ttlMs: number,
    private readonly watched: ReadonlySet<string>,
  ) {}

  /** Listens to the ORM's flushes and transactions (how it learns of a store's change). */
  attachTo(orm: Orm): this {
    orm.em.getEventManager().registerSubscriber(this);
    return this;
  }

  /** The cached value, or `load()`'s; concurrent misses of one key share a single load. */
  get<T>(key: string, load: () => Promise<T | null>): Promise<T | null> {
    if (!(this.ttlMs > 0)) return load();
    const now = Date.now();
    const hit = this.#entries.get(key);
    if (hit && hit.expiresAt > now) return hit.value as Promise<T | null>;
    const generation = this.#generation;
    const value = load();
    const entry = { value, expiresAt: now + this.ttlMs };
    if (this.#entries.size >= CACHE_MAX_ENTRIES) this.#entries.clear();
    this.#entries.set(key, entry);
    // Keep only a found value, and only when no store change was flushed while it was read.
    const keep = (found: T | null) => found !== null && generation === this.#generation && this.#uncommitted.size === 0;
    const forget = () => {
      if (this.#entries.get(key) === entry) this.#entries.delete(key);
    };
    value.then((found) => keep(found) || forget(), forget);
    return value;
  }

  onFlush({ em, uow }: FlushEventArgs): void {
    if (!uow.getChangeSets().some((changeSet) => this.watched.has(changeSet.meta.className))) return;
    this.#uncommitted.add(em);
    this.#clear();
  }

  afterFlush({ em }: FlushEventArgs): void {
    // A flush outside a transaction has committed by now.
    if (!em.isInTransaction()) this.#settle(em);
  }

  afterTransactionCommit({ em }: TransactionEventArgs): void {
    this.#settle(em);
  }

  afterTransactionRollback({ em }: TransactionEventArgs): void {
    this.#settle(em);
  }

  #settle(em: EntityManager): void {
    if (this.#uncommitted.delete(em)) this.#clear();
  }

  #clear(): void {
    this.#generation++;
    this.#entries.clear();
  }
}
