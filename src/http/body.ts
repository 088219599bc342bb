import express, { type Request, type RequestHandler, type Response } from 'express';
import { AppError } from '../shared/errors.ts';
import { unstorablePathIn } from '../shared/text.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

declare module 'express-serve-static-core' {
  interface Request {
    /** The exact bytes received, kept for webhook signature verification. */
    rawBody?: Buffer;
  }
}

const JSON_TYPES = ['application/json', 'application/*+json'];

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** Runs an Express middleware as a step of a longer one. */
export const step = (middleware: RequestHandler, req: Request, res: Response) =>
  new Promise<void>((resolve, reject) => middleware(req, res, (error?: unknown) => (error ? reject(error) : resolve())));

const parseJson = express.json({ limit: MAX_BODY_BYTES, type: JSON_TYPES });

/** A signed route's body is read as bytes whatever its content type: the signature covers the bytes. */
const readBytes = express.raw({ type: () => true, limit: MAX_BODY_BYTES });

/** Reads the body as the exact bytes received into `req.rawBody` (413 over 1 MiB), for signature verification. */
export async function readRawBody(req: Request, res: Response): Promise<Buffer> {
  await step(readBytes, req, res);
  req.rawBody = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  return req.rawBody;
}

/**
 * The one body pipeline of every contract route. A body must say it is JSON (415, never a 500);
 * it is parsed (400; 413 over 1 MiB), from `req.rawBody` when the route read its bytes first (a
 * signed webhook, which must be JSON even when empty); then text PostgreSQL cannot store anywhere
 * in the request is refused: U+0000 (`\u0000` in JSON, `%00` in the URL) and unpaired UTF-16
 * surrogates (`\ud800` in JSON). Both pass schema validation; without this check they surface as
 * a database error, a 500.
 */
export async function parseJsonBody(req: Request, res: Response): Promise<void> {
  const raw = req.rawBody;
  if ((raw !== undefined || hasBody(req)) && !req.is(JSON_TYPES)) throw new AppError('unsupported_media_type');
  const inUrl = /%00/i.test(req.originalUrl) ? (unstorablePathIn(req.query) ?? 'path') : null;
  if (inUrl !== null) throw unstorable(inUrl);
  if (raw === undefined) {
    await step(parseJson, req, res);
  } else {
    try {
      req.body = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new AppError('validation_failed', { message: 'The webhook body is not valid JSON.', param: 'body' });
    }
  }
  const inBody = unstorablePathIn(req.body);
  if (inBody !== null) throw unstorable(inBody || 'body');
}

function unstorable(param: string): AppError {
  return new AppError('validation_failed', { param, message: `${param}: must not contain NUL characters or unpaired surrogates.` });
}
