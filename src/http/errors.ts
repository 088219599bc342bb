import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { AppError } from '../shared/errors.ts';
import { isDatabaseUnavailable } from '../db/errors.ts';

export interface ErrorBody {
  error: { code: string; message: string; param?: string; details?: Record<string, unknown> };
  request_id: string;
}

/** The one place where an error becomes an HTTP status and the error envelope. */
export function sendError(req: Request, res: Response, error: AppError): void {
  if (error.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.retryAfterSeconds));
  const body: ErrorBody = {
    error: {
      code: error.code,
      message: error.message,
      ...(error.param !== undefined && { param: error.param }),
      ...(error.details !== undefined && { details: error.details }),
    },
    request_id: req.requestId,
  };
  res.status(error.status).json(body);
}

/** Turns body-parser and infrastructure failures into our codes; anything else is a 500. */
function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  const type = (error as { type?: string } | null)?.type;
  switch (type) {
    case 'entity.parse.failed':
      return new AppError('validation_failed', { message: 'The request body is not valid JSON.', param: 'body' });
    case 'entity.too.large':
      return new AppError('payload_too_large');
    case 'charset.unsupported':
      return new AppError('unsupported_media_type', { message: 'Request bodies must be UTF-8 JSON.' });
    case 'encoding.unsupported':
      return new AppError('unsupported_media_type', {
        message: 'The Content-Encoding is not supported: send the body as is, or in one of gzip, deflate, br or zstd.',
      });
    case 'request.aborted':
    case 'request.size.invalid':
      return new AppError('validation_failed', { message: 'The request body was incomplete.', param: 'body' });
  }
  if (isUndecodableBody(error)) {
    return new AppError('validation_failed', { message: 'The request body could not be decoded with its Content-Encoding.', param: 'body' });
  }
  // The router could not percent-decode a path parameter (e.g. `/v1/reseller_stores/%FF`).
  if (error instanceof URIError && (error as { status?: number }).status === 400) {
    return new AppError('validation_failed', { message: 'The request path is not valid percent-encoded UTF-8.', param: 'path' });
  }
  if (isDatabaseUnavailable(error)) return new AppError('unavailable', { retryAfterSeconds: 1 });
  return new AppError('internal_error');
}

/**
 * A body that does not decompress as its Content-Encoding says: body-parser passes the
 * decompression stream's own error on with status 400 and no `type`. Those are zlib errors, with a
 * numeric `errno` and a string `code` (Z_DATA_ERROR, Z_BUF_ERROR for a truncated stream,
 * ERR__ERROR_FORMAT_… from brotli, ZSTD_error_… from zstd).
 */
function isUndecodableBody(error: unknown): boolean {
  const { status, type, code, errno } = (error ?? {}) as { status?: unknown; type?: unknown; code?: unknown; errno?: unknown };
  return status === 400 && type === undefined && typeof code === 'string' && typeof errno === 'number';
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error, req, res, next) => {
    if (res.headersSent) return next(error);
    const appError = toAppError(error);
    if (appError.status >= 500) {
      ((req as { log?: Logger }).log ?? logger).error({ err: error, code: appError.code }, 'request failed');
    }
    sendError(req, res, appError);
  };
}

export const notFoundHandler: RequestHandler = (req, res) => {
  sendError(req, res, new AppError('not_found', { message: `No route for ${req.method} ${req.path}.` }));
};
