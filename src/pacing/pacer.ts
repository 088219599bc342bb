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
 * How far ahead an ordinary attempt's call books its turn (the booking horizon), at the least: a
 * call beyond it waits in the store's line with an estimate instead (src/pacing/repository.ts). A
 * call that books whatever (a cancellation's, a call waiting inline) so finds at most this much of
 * ordinary work booked ahead of it, however long the store's backlog. A store slower than one call
 * in 5 s books two calls ahead.
 */
export const BOOKING_HORIZON_MS = 10_000;

/**
 * How a call books its turn. `ordinary`: an attempt's call, booked at most the booking horizon ahead
 * (beyond it, an estimate). `now`: the store's next turn however far (an urgent attempt, a call
 * waiting inline, an attempt that comes back with its estimate).
 */
export type TurnLane = 'ordinary' | 'now';

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
   * still stands; for an `ordinary` call beyond the booking horizon, an estimate (nothing booked).
   * `now` unless told.
   */
  turns(calls: { store: PacedStore; heldAt?: Date | null; lane?: TurnLane }[]): Promise<Turn[]> {
    return Promise.all(
      calls.map(({ store, heldAt, lane }) =>
        this.#reservations.submit({ ...this.#allowance(store), heldAt: heldAt ?? null, horizonMs: lane === 'ordinary' ? this.horizonMs(store) : null }),
      ),
    );
  }

  /** How far ahead of now an ordinary call to the store books its turn: BOOKING_HORIZON_MS, or two calls at a slower rate. */
  horizonMs(store: PacedStore): number {
    return Math.max(BOOKING_HORIZON_MS, 2 * this.#allowance(store).spacingMs);
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

  /** Gives back places in the store's waiting line whose members went away (see PacingRepository.leaveLine). */
  async leaveLine(store: PacedStore, places: number): Promise<void> {
    if (places <= 0) return;
    await this.#repository.leaveLine(store.storeId, places, this.#allowance(store).spacingMs);
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
  #allowance(store: PacedStore): Omit<TurnRequest, 'heldAt' | 'horizonMs'> {
    const rate = this.#rates[store.platform];
    return { storeId: store.storeId, spacingMs: 1000 / rate.perSecond, burst: Math.max(1, rate.burst - 1) };
  }
}
