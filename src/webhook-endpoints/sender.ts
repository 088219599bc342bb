import { STATUS_CODES } from 'node:http';
import { request, type Dispatcher } from 'undici';
import { UnsafeAddressError } from '../shared/url-safety.ts';
import { signatureHeader } from './signing.ts';

/** The receiver's answer is read up to this much, then the connection is dropped (events.md). */
export const RESPONSE_READ_LIMIT_BYTES = 4096;
/** What is kept of that answer. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export const USER_AGENT = 'order-routing-service-webhooks/1.0';

export interface OutgoingDelivery {
  url: string;
  /** The event's id: the `webhook-id` of every attempt. */
  webhookId: string;
  /** The event as JSON, byte for byte what is signed. */
  body: string;
  secrets: string[];
  timeoutMs: number;
}

export interface AttemptResult {
  ok: boolean;
  responseStatus: number | null;
  error: string | null;
  /** Up to RESPONSE_EXCERPT_BYTES of the answer's body. */
  responseExcerpt: string | null;
  durationMs: number;
  /** For metrics. */
  outcome: 'success' | 'http_error' | 'redirect' | 'timeout' | 'refused_address' | 'network_error';
}

/**
 * One attempt, as Standard Webhooks 1.0 says: POST the event with `webhook-id`, `webhook-timestamp`
 * (this attempt's Unix seconds) and `webhook-signature`. A 2xx within the timeout succeeds;
 * anything else fails, a redirect too (undici's request() never follows one). Never throws.
 */
export async function attemptDelivery(dispatcher: Dispatcher, delivery: OutgoingDelivery): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const timestamp = Math.floor(Date.now() / 1000);
  try {
    const response = await request(delivery.url, {
      method: 'POST',
      dispatcher,
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': delivery.webhookId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(delivery.secrets, delivery.webhookId, timestamp, delivery.body),
      },
      body: delivery.body,
      signal: AbortSignal.timeout(delivery.timeoutMs),
    });
    const status = response.statusCode;
    const responseExcerpt = await readExcerpt(response.body);
    const base = { responseStatus: status, responseExcerpt, durationMs: elapsed() };
    if (status >= 200 && status < 300) return { ...base, ok: true, error: null, outcome: 'success' };
    if (status >= 300 && status < 400) return { ...base, ok: false, error: `answered ${status} ${STATUS_CODES[status] ?? ''}`.trim() + ' (redirects are not followed)', outcome: 'redirect' };
    return { ...base, ok: false, error: `answered ${status} ${STATUS_CODES[status] ?? ''}`.trim(), outcome: 'http_error' };
  } catch (error) {
    return { ok: false, responseStatus: null, responseExcerpt: null, durationMs: elapsed(), ...describeFailure(error, delivery.timeoutMs) };
  }
}

/**
 * The first bytes of the answer: read up to RESPONSE_READ_LIMIT_BYTES, then the stream is
 * destroyed (a receiver cannot make us read, or keep, more). Failing to read it changes nothing.
 */
async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= RESPONSE_READ_LIMIT_BYTES) break;
    }
  } catch {
    // A body cut short or timed out: keep what arrived.
  } finally {
    body.destroy();
  }
  if (size === 0) return null;
  // PostgreSQL text cannot hold NUL; a multi-byte character cut at the limit becomes U+FFFD.
  return Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8').replaceAll('\u0000', '');
}

function describeFailure(error: unknown, timeoutMs: number): Pick<AttemptResult, 'error' | 'outcome'> {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return { error: `timed out after ${timeoutMs} ms`, outcome: 'timeout' };
  }
  const unsafe = findCause(error, (cause) => cause instanceof UnsafeAddressError);
  if (unsafe) return { error: unsafe.message, outcome: 'refused_address' };
  const cause = findCause(error, (candidate) => typeof (candidate as NodeJS.ErrnoException).code === 'string') ?? (error instanceof Error ? error : null);
  if (!cause) return { error: 'the request failed', outcome: 'network_error' };
  const code = (cause as NodeJS.ErrnoException).code;
  return { error: code && !cause.message.includes(code) ? `${cause.message} (${code})` : cause.message, outcome: 'network_error' };
}

/** The error or one of its causes (undici wraps some), if one matches. */
function findCause(error: unknown, matches: (candidate: Error) => boolean): Error | null {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    if (matches(current)) return current;
    if (current instanceof AggregateError) {
      const inner = current.errors.find((candidate): candidate is Error => candidate instanceof Error && matches(candidate));
      if (inner) return inner;
    }
  }
  return null;
}
