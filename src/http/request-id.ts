import type { NextFunction, Request, Response } from 'express';
import { newRequestId } from '../shared/ids.ts';
import { withLogContext } from '../shared/log-context.ts';

const PRINTABLE = /^[\x21-\x7e]{1,128}$/;

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
  }
}

/** Keeps a caller's printable X-Request-Id (<= 128 chars), otherwise makes one. */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const given = req.get('x-request-id');
  req.requestId = given && PRINTABLE.test(given) ? given : newRequestId();
  res.setHeader('X-Request-Id', req.requestId);
  // Every line logged while handling the request carries its id, whichever logger writes it.
  withLogContext({ request_id: req.requestId }, next);
}

/** A response body with the request id every body carries. */
export function withRequestId<T extends object>(req: { requestId: string }, body: T): T & { request_id: string } {
  return { ...body, request_id: req.requestId };
}
