import type { Request } from 'express';
import { rateLimit, type Store } from 'express-rate-limit';
import type { SharedCounters } from '../rate-limits/repository.ts';
import { AppError } from '../shared/errors.ts';

const WINDOW_MS = 60_000;

/**
 * Per client IP, per minute, for the routes whose metadata says `rateLimited` (the credential
 * endpoints), counted in PostgreSQL (rate_limit_counters) so the limit holds across every API
 * process behind a load balancer rather than per process.
 */
export function perMinuteLimiter(limit: number, counters: SharedCounters) {
  return rateLimit({
    windowMs: WINDOW_MS,
    limit,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    store: sharedStore(counters),
    handler: (req, _res, next) => {
      const resetTime = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const retryAfterSeconds = Math.max(1, Math.ceil(((resetTime?.getTime() ?? Date.now() + WINDOW_MS) - Date.now()) / 1000));
      next(new AppError('rate_limited', { retryAfterSeconds }));
    },
  });
}

/** express-rate-limit's store interface over the shared counters. */
function sharedStore(counters: SharedCounters): Store {
  const prefix = 'auth:';
  return {
    prefix,
    localKeys: false,
    async increment(key) {
      const [count] = await counters.hit([prefix + key], WINDOW_MS);
      return { totalHits: count!.hits, resetTime: new Date(count!.resetsAtMs) };
    },
    async get(key) {
      const [count] = await counters.current([prefix + key]);
      return count ? { totalHits: count.hits, resetTime: new Date(count.resetsAtMs) } : undefined;
    },
    decrement: (key) => counters.unhit(prefix + key),
    resetKey: (key) => counters.reset(prefix + key),
  };
}
