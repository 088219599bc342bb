import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { newRequestId } from '../shared/ids.ts';

/**
 * Answers a request Node's HTTP parser refused (headers over its 16 KiB limit, a malformed request
 * line or header) with the error envelope instead of Node's bare `400`/`431` without a body, so
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
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const message =
      error.code === 'HPE_HEADER_OVERFLOW' ? 'The request headers are larger than 16 KiB.' : 'The request is not valid HTTP/1.1.';
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
