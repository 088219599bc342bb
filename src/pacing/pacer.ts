import type { Db } from '../db/sql.ts';
import { GroupCommit } from '../db/group-commit.ts';
import type { Platform } from '../../contract/enums.ts';
import { assertValidRate, DEFAULT_PACING, type PacedStore, type PacingRate, type StorePacer } from './rates.ts';
import { PacingRepository, type Turn, type TurnRequest } from './repository.ts';

/**
 * A turn reserved before a queue message was postponed to it is honoured when the message comes
 * back up to this late (a busy worker, pg-boss's 0.5 s polling); later than that, calls held back
 * together would reach the platform together, so the message takes a fresh turn instead.
 */
const LATE_TURN_TOLERANCE_MS = 1_000;

/**
 * Every platform call's turn, from one token bucket per store credential kept in PostgreSQL
 * (store_pacing), so every worker and API process shares each store's rate limit and a 429's
 * pause. Reservations made while one is in flight go to the database together (group commit): a
 * worker's batches of attempts cost one statement between them.
 */
export class SharedPacer implements StorePacer {
  readonly #rates: Readonly<Record<Platform, PacingRate>>;
  readonly #repository: PacingRepository;
  readonly #reservations: GroupCommit<TurnRequest, Turn>;

  constructor(db: Db, rates: Partial<Record<Platform, PacingRate>> = {}) {
    this.#rates = { ...DEFAULT_PACING, ...rates };
    Object.values(this.#rates).forEach(assertValidRate);
    this.#repository = new PacingRepository(db);
    this.#reservations = new GroupCommit((requests) => this.#repository.reserve(requests, LATE_TURN_TOLERANCE_MS), {
      maxItems: 256,
      maxInFlight: 1,
    });
  }

  /**
   * A turn for each call: a fresh one, or the one a postponed message held (`heldAt`) while it
   * still stands.
   */
  turns(calls: { store: PacedStore; heldAt?: Date | null }[]): Promise<Turn[]> {
    return Promise.all(calls.map(({ store, heldAt }) => this.#reservations.submit({ ...this.#allowance(store), heldAt: heldAt ?? null })));
  }

  async reserve(store: PacedStore): Promise<number> {
    const [turn] = await this.turns([{ store }]);
    return turn!.waitMs;
  }

  /** Gives back turns reserved for calls that were never made (see PacingRepository.release). */
  async release(store: PacedStore, calls: number): Promise<void> {
    if (calls <= 0) return;
    await this.#repository.release(store.storeId, calls, this.#allowance(store).spacingMs);
  }

  async pause(store: PacedStore, ms: number): Promise<void> {
    const { spacingMs, burst } = this.#allowance(store);
    await this.#repository.pause(store.storeId, ms, spacingMs, burst);
  }

  /**
   * One call of the burst is kept back: a turn is taken a little before its request reaches the
   * platform (the worker still takes the row), so a burst's requests arrive later than their turns
   * while the next turn counts from the first. Without the slack, the call after a full burst met
   * a platform bucket short of its token by those milliseconds (measured: one 429 per run).
   */
  #allowance(store: PacedStore): Omit<TurnRequest, 'heldAt'> {
    const rate = this.#rates[store.platform];
    return { storeId: store.storeId, spacingMs: 1000 / rate.perSecond, burst: Math.max(1, rate.burst - 1) };
  }
}
