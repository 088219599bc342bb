import type { Platform } from '../orders/types.ts';

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
 * An in-memory leaky bucket: callers await `take()` and are released in arrival order as
 * tokens refill. One timer is armed while anyone waits; nothing polls.
 */
export class TokenBucket {
  #tokens: number;
  #refilledAt: number;
  #pausedUntil = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #waiting: Array<() => void> = [];

  constructor(
    private readonly rate: PacingRate,
    private readonly now: () => number = Date.now,
  ) {
    assertValidRate(rate);
    this.#tokens = rate.burst;
    this.#refilledAt = now();
  }

  /** Resolves once the caller may send one request. */
  take(): Promise<void> {
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      this.#drain();
    });
  }

  /** Holds every caller back for `ms`, as the platform asked with Retry-After. */
  pause(ms: number): void {
    const until = this.now() + ms;
    if (until <= this.#pausedUntil) return;
    this.#pausedUntil = until;
    // The platform's own bucket is full: resume with a single call, then at the steady rate.
    this.#tokens = 1;
    this.#refilledAt = until;
    this.#drain();
  }

  /** How long new callers would wait for a pause to end (0 when not paused). */
  pausedForMs(): number {
    return Math.max(0, this.#pausedUntil - this.now());
  }

  #drain(): void {
    if (this.#timer !== undefined) return;
    const now = this.now();
    this.#refill(now);
    while (this.#waiting.length > 0 && now >= this.#pausedUntil && this.#tokens >= 1) {
      this.#tokens -= 1;
      this.#waiting.shift()?.();
    }
    if (this.#waiting.length === 0) return;
    const untilToken = ((1 - this.#tokens) / this.rate.perSecond) * 1000;
    const waitMs = Math.max(this.#pausedUntil - now, untilToken, 1);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#drain();
    }, Math.ceil(waitMs));
  }

  #refill(now: number): void {
    if (now <= this.#refilledAt) return;
    const refilled = ((now - this.#refilledAt) / 1000) * this.rate.perSecond;
    this.#tokens = Math.min(this.rate.burst, this.#tokens + refilled);
    this.#refilledAt = now;
  }
}

/** One bucket per store (platform + shop domain), so one busy store never slows another. */
export class Pacer {
  readonly #buckets = new Map<string, TokenBucket>();

  constructor(private readonly rates: Readonly<Record<Platform, PacingRate>> = DEFAULT_PACING) {
    Object.values(rates).forEach(assertValidRate);
  }

  bucketFor(platform: Platform, shopDomain: string): TokenBucket {
    const key = `${platform}:${shopDomain.toLowerCase()}`;
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      bucket = new TokenBucket(this.rates[platform]);
      this.#buckets.set(key, bucket);
    }
    return bucket;
  }
}

function assertValidRate(rate: PacingRate): void {
  if (!(rate.burst >= 1) || !(rate.perSecond > 0)) {
    throw new RangeError(`invalid pacing rate ${JSON.stringify(rate)}`);
  }
}
