import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { AppError } from '../shared/errors.ts';
import { newRequestId } from '../shared/ids.ts';
import { sendError } from './errors.ts';

/**
 * Leaves no answer to Node's HTTP server itself, so every answer is the error envelope with an
 * X-Request-Id: parser errors are answered by `answerClientError`; an Expect other than
 * 100-continue (a bare 417 from Node) is ignored, as RFC 9110 allows, and the request served. A
 * missing Host header (a bare 400 from Node) needs the server created with `requireHostHeader:
 * false`, and `requireHost` in the app.
 */
export function answerEverythingInTheEnvelope(server: Server, logger: Logger): void {
  server.on('clientError', answerClientError(logger));
  server.on('checkExpectation', (req, res) => server.emit('request', req, res));
}

/** RFC 9112: an HTTP/1.1 request without a Host header is a 400, here in the error envelope. */
export function requireHost(req: Request, res: Response, next: NextFunction): void {
  if (req.httpVersion !== '1.1' || req.headers.host !== undefined) return next();
  res.setHeader('Connection', 'close');
  sendError(req, res, new AppError('validation_failed', { message: 'HTTP/1.1 requests need a Host header.', param: 'headers' }));
}

/**
 * Answers a request Node's HTTP parser refused (headers over its 16 KiB limit, a malformed request
 * line or header, headers not complete within the server's timeout) with the error envelope instead of Node's bare `400`/`431` without a body, so
 * every error a client can get is the documented `{error, request_id}`. The request never reached
 * Express, hence the hand-written response; the connection is closed after it.
 */
export function answerClientError(logger: Logger) {
  return (error: NodeJS.ErrnoException, socket: Duplex): void => {
    const inProgress = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
    if (error.code === 'ECONNRESET' || !socket.writable || inProgress) {
      socket.destroy();
      return;
    }
    const requestId = newRequestId();
    // Only the code: the error carries the raw bytes received, credentials included.
    logger.info({ code: error.code, request_id: requestId }, 'unparseable request refused');
    // A timeout too (Node's own answer is a bare 408): the closed set of codes has none for it.
    const message =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'The request headers are larger than 16 KiB.'
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? 'The request was not received completely in time.'
          : 'The request is not valid HTTP/1.1.';
    const body = JSON.stringify({ error: { code: 'validation_failed', message, param: 'headers' }, request_id: requestId });
    socket.end(
      'HTTP/1.1 400 Bad Request\r\n' +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  };
}
