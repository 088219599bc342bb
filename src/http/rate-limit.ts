import type { Request } from 'express';
import { rateLimit } from 'express-rate-limit';
import { AppError } from '../shared/errors.ts';

/** Per client IP, per minute, for the routes whose metadata says `rateLimited` (the credential endpoints). */
export function perMinuteLimiter(limit: number) {
  return rateLimit({
    windowMs: 60_000,
    limit,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    handler: (req, _res, next) => {
      const resetTime = (req as Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const retryAfterSeconds = Math.max(1, Math.ceil(((resetTime?.getTime() ?? Date.now() + 60_000) - Date.now()) / 1000));
      next(new AppError('rate_limited', { retryAfterSeconds }));
    },
  });
}
