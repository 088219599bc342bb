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

const parseJson = express.json({
  limit: MAX_BODY_BYTES,
  type: ['application/json', 'application/*+json'],
  verify: (req, _res, buffer) => {
    (req as Request).rawBody = buffer;
  },
});

/**
 * Parses a JSON body, then refuses text PostgreSQL cannot store anywhere in the request: U+0000
 * (`\u0000` in JSON, `%00` in the URL) and unpaired UTF-16 surrogates (`\ud800` in JSON). Both
 * pass schema validation; without this check they surface as a database error, a 500.
 */
export function jsonBody(req: Request, res: Response, next: NextFunction): void {
  const inUrl = /%00/i.test(req.originalUrl) ? (unstorableIn(req.query) ?? 'path') : null;
  if (inUrl !== null) return next(unstorable(inUrl));
  parseJson(req, res, (error?: unknown) => {
    if (error) return next(error);
    const inBody = unstorableIn(req.body);
    next(inBody === null ? undefined : unstorable(inBody || 'body'));
  });
}

const UNSTORABLE = /[\u0000\uD800-\uDFFF]/u;

export function unstorable(param: string): AppError {
  return new AppError('validation_failed', { param, message: `${param}: must not contain NUL characters or unpaired surrogates.` });
}

/** The dotted path of the first key or string value with unstorable text ('' for the value itself), or null. */
export function unstorableIn(value: unknown, path: string[] = []): string | null {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? path.join('.') : null;
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, item] of Object.entries(value)) {
    if (UNSTORABLE.test(key)) return [...path, key].join('.');
    const found = unstorableIn(item, [...path, key]);
    if (found !== null) return found;
  }
  return null;
}
