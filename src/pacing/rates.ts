import type { Platform } from '../../contract/enums.ts';

/** A store's allowance: up to `burst` calls at once, refilled at `perSecond`. */
export interface PacingRate {
  burst: number;
  perSecond: number;
}

export const DEFAULT_PACING: Readonly<Record<Platform, PacingRate>> = {
  platform_a: { burst: 40, perSecond: 2 },
  platform_b: { burst: 40, perSecond: 5 },
  custom: { burst: 40, perSecond: 5 },
};

/**
 * The allowance a call spends: `storeId` is its key, the store's credential fingerprinted
 * (src/attempts/store-connection.ts `allowanceKeyOf`), never its domain alone.
 */
export interface PacedStore {
  storeId: string;
  platform: Platform;
}

/**
 * Turns to call a store, shared by every caller of that store (src/pacing/pacer.ts keeps them in
 * PostgreSQL, for every process on the database).
 */
export interface StorePacer {
  /** Reserves the store's next turn; resolves with how long until it comes (ms). */
  reserve(store: PacedStore): Promise<number>;
  /** Holds back every call to the store for `ms`, as the platform asked with a 429's Retry-After. */
  pause(store: PacedStore, ms: number): Promise<void>;
  /** Gives back `calls` turns reserved for calls that will never be made (their caller stopped waiting). */
  release(store: PacedStore, calls: number): Promise<void>;
}

export function assertValidRate(rate: PacingRate): void {
  if (!(rate.burst >= 1) || !(rate.perSecond > 0)) {
    throw new RangeError(`invalid pacing rate ${JSON.stringify(rate)}`);
  }
}
