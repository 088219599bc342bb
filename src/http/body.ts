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

/**
 * The dotted path of the first key or string value with unstorable text ('' for the value itself),
 * or null. Walks with an explicit stack, not recursion: a 1 MiB body can nest half a million levels
 * deep (`[[[[…]]]]`), and a recursive walk overflowed the call stack inside the body parser's
 * callback, an uncaught exception that took the whole process down.
 */
export function unstorableIn(value: unknown): string | null {
  interface Step {
    value: unknown;
    key: string | null;
    parent: Step | null;
  }
  const pathOf = (step: Step) => {
    const keys: string[] = [];
    for (let at: Step | null = step; at && at.key !== null; at = at.parent) keys.push(at.key);
    return keys.reverse().join('.');
  };
  const stack: Step[] = [{ value, key: null, parent: null }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    if (step.key !== null && UNSTORABLE.test(step.key)) return pathOf(step);
    if (typeof step.value === 'string') {
      if (UNSTORABLE.test(step.value)) return pathOf(step);
      continue;
    }
    if (typeof step.value !== 'object' || step.value === null) continue;
    // Reversed, so entries are visited in order, as a recursive walk would.
    const entries = Object.entries(step.value);
    for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], key: entries[i]![0], parent: step });
  }
  return null;
}
