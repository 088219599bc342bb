import express, { type NextFunction, type Request, type Response } from 'express';
import { AppError } from '../shared/errors.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

declare module 'express-serve-static-core' {
  interface Request {
    /** The exact bytes received, kept for webhook signature verification. */
    rawBody?: Buffer;
  }
}

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** A request that carries a body must say it is JSON; everything else is 415, never a 500. */
export function requireJson(req: Request, _res: Response, next: NextFunction): void {
  if (req.rawBody === undefined && hasBody(req) && !req.is(['application/json', 'application/*+json'])) {
    return next(new AppError('unsupported_media_type'));
  }
  next();
}

export const jsonBody = express.json({
  limit: MAX_BODY_BYTES,
  type: ['application/json', 'application/*+json'],
  verify: (req, _res, buffer) => {
    (req as Request).rawBody = buffer;
  },
});
