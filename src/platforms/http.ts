import { STATUS_CODES } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { request as send, type Dispatcher } from 'undici';
import type { Platform } from '../orders/types.ts';
import { redactSecret, storableText } from '../shared/text.ts';
import type { StorePacer } from '../pacing/rates.ts';
import { noteExchange } from './exchange.ts';
import { AnswerTooLarge, PayloadError, PlatformError, type StoreConnection } from './types.ts';

/** Settings shared by every platform's client. */
export interface HttpClientSettings {
  /** A store's base URL with a `{shopDomain}` placeholder, e.g. `https://{shopDomain}`. */
  baseUrlTemplate: string;
  timeoutMs: number;
  /** A 429 whose Retry-After is at most this long is waited out inside the call; so is a turn this near. */
  maxInlineRetryAfterMs: number;
  /** A Retry-After (a 429's, a 503's) is honoured up to this long (a platform asking for an hour gets this). */
  maxRetryAfterMs: number;
  /** Each store's turns, shared by every caller of the store. */
  pacer: StorePacer;
  /** Told about every finished call (for metrics). */
  observe?: (call: PlatformCallObservation) => void;
  /** Connects the calls: the URL safety guard when stores are reached by their own domain (src/shared/url-safety.ts). */
  dispatcher?: Dispatcher;
}

export interface PlatformCallObservation {
  platform: Platform;
  method: 'GET' | 'POST' | 'PUT';
  outcome: 'success' | 'retryable_error' | 'error';
  durationSeconds: number;
}

export interface PlatformHttpClientOptions extends HttpClientSettings {
  platform: Platform;
  authHeaders(accessToken: string): Record<string, string>;
}

/** A response header's value (repeats joined with ", ", as HTTP lists are), or null when absent. */
export type ResponseHeaders = (name: string) => string | null;

/**
 * Turns a 2xx body (and, for list pages, its paging headers; for created things, the status the
 * platform answered with) into the caller's result; throws PayloadError when the answer is not as expected.
 */
export type ResponseReader<T> = (body: unknown, headers: ResponseHeaders, status: number) => T;

interface PlatformRequest {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  body?: unknown;
  idempotencyKey?: string;
  /** The most of the answer's body read (ANSWER_MAX_BYTES unless a list page says otherwise). */
  maxBodyBytes?: number;
}

/** How much of one platform answer is read at most: a call's answer, and a list page's. */
export const ANSWER_MAX_BYTES = 1024 * 1024;
export const LIST_PAGE_MAX_BYTES = 8 * 1024 * 1024;

export interface GetOptions {
  /** A list page may be larger than one thing's answer (LIST_PAGE_MAX_BYTES). */
  maxBodyBytes?: number;
}

/** The options of a list page's GET. */
export const LIST_PAGE: GetOptions = { maxBodyBytes: LIST_PAGE_MAX_BYTES };

interface RawResponse {
  status: number;
  headers: ResponseHeaders;
  /** The first Retry-After: an HTTP date has a comma of its own, so repeats are not joined. */
  retryAfter: string | null;
  text: string;
  /** True when the body was longer than the request's bound: `text` is only its start. */
  oversized: boolean;
}

interface ErrorFields {
  retryable: boolean;
  status?: number;
  retryAfterMs?: number | null;
  /** False when the request never left: its turn was too far away. */
  sent?: boolean;
  /** A 409's JSON body (`PlatformError.answer`). */
  answer?: unknown;
}

const MAX_INLINE_RETRIES = 3;
/** The pause after a 429 that says nothing of when to come back. */
const DEFAULT_RETRY_AFTER_MS = 1_000;
const MAX_DETAIL_LENGTH = 300;
/** A PlatformError's whole message (its context, then the detail). */
const MAX_MESSAGE_LENGTH = 500;
const SHOP_DOMAIN = /^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?(?::\d{1,5})?$/i;

/**
 * JSON over HTTP to one platform's stores: auth, pacing, timeouts, inline waits on short 429s,
 * and every failure turned into a PlatformError that never carries the access token.
 */
export class PlatformHttpClient {
  constructor(private readonly options: PlatformHttpClientOptions) {}

  get<T>(store: StoreConnection, path: string, read: ResponseReader<T>, options: GetOptions = {}): Promise<T> {
    return this.#observed(store, { method: 'GET', path, ...options }, read);
  }

  /**
   * GETs an absolute URL the platform handed out (a list's next page), exactly as given, but only
   * when it is under the store's own base URL: the access token must never follow a link elsewhere.
   */
  getUrl<T>(store: StoreConnection, url: string, read: ResponseReader<T>, options: GetOptions = {}): Promise<T> {
    const path = this.#pathUnderStore(store, url);
    if (path === null) {
      const outside = this.#error(store, { method: 'GET', path: '(next page)' }, 'not sent: the link points outside the store', {
        retryable: false,
      });
      this.options.observe?.({ platform: this.options.platform, method: 'GET', outcome: 'error', durationSeconds: 0 });
      return Promise.reject(outside);
    }
    return this.get(store, path, read, options);
  }

  post<T>(
    store: StoreConnection,
    path: string,
    body: unknown,
    idempotencyKey: string,
    read: ResponseReader<T>,
  ): Promise<T> {
    return this.#observed(store, { method: 'POST', path, body, idempotencyKey }, read);
  }

  /** A PUT (platform_b's order update); it carries no Idempotency-Key: setting a status twice is harmless. */
  put<T>(store: StoreConnection, path: string, body: unknown, read: ResponseReader<T>): Promise<T> {
    return this.#observed(store, { method: 'PUT', path, body }, read);
  }

  async #observed<T>(store: StoreConnection, request: PlatformRequest, read: ResponseReader<T>): Promise<T> {
    const started = performance.now();
    const report = (outcome: PlatformCallObservation['outcome']) =>
      this.options.observe?.({
        platform: this.options.platform,
        method: request.method,
        outcome,
        durationSeconds: (performance.now() - started) / 1000,
      });
    try {
      const result = await this.#call(store, request, read);
      report('success');
      return result;
    } catch (error) {
      report(error instanceof PlatformError && error.retryable ? 'retryable_error' : 'error');
      throw error;
    }
  }

  async #call<T>(store: StoreConnection, request: PlatformRequest, read: ResponseReader<T>): Promise<T> {
    const url = this.#urlFor(store, request);
    let refused: PlatformError | undefined;
    for (let retries = 0; ; retries++) {
      try {
        await this.#waitForTurn(store, request);
      } catch (notSent) {
        // Refused once already: the 429 is the outcome, to be tried again once the store is free.
        if (refused && notSent instanceof PlatformError) throw this.#refusedUntil(refused, notSent.retryAfterMs);
        throw notSent;
      }
      const response = await this.#exchange(url, store, request);
      if (response.status >= 200 && response.status < 300) return this.#read(response, store, request, read);
      const error = this.#httpError(response, store, request);
      if (response.status !== 429) throw error;
      // Every caller of the store, in every process, waits out the pause; so does this call's retry,
      // and so do this attempt's later calls: turns held from before the pause are void.
      if (store.heldTurns) store.heldTurns.remaining = 0;
      await this.options.pacer.pause(this.#paced(store), error.retryAfterMs!);
      if (error.retryAfterMs! > this.options.maxInlineRetryAfterMs || retries >= MAX_INLINE_RETRIES) throw error;
      refused = error;
    }
  }

  #refusedUntil(refused: PlatformError, retryAfterMs: number | null): PlatformError {
    return new PlatformError(refused.message, true, refused.status, Math.max(refused.retryAfterMs ?? 0, retryAfterMs ?? 0));
  }

  #urlFor(store: StoreConnection, request: PlatformRequest): string {
    if (!SHOP_DOMAIN.test(store.shopDomain)) {
      throw this.#error(store, request, 'not sent: the shop domain is not a host name', { retryable: false });
    }
    return `${this.#baseUrl(store)}${request.path}`;
  }

  #baseUrl(store: StoreConnection): string {
    return this.options.baseUrlTemplate.replace('{shopDomain}', store.shopDomain).replace(/\/+$/, '');
  }

  /** `url`'s path and query below the store's base URL, or null when it is elsewhere. */
  #pathUnderStore(store: StoreConnection, url: string): string | null {
    if (!SHOP_DOMAIN.test(store.shopDomain) || !URL.canParse(url)) return null;
    const base = new URL(this.#baseUrl(store));
    const target = new URL(url);
    const basePath = base.pathname.replace(/\/+$/, '');
    if (target.origin !== base.origin || !target.pathname.startsWith(`${basePath}/`)) return null;
    if (target.username !== '' || target.password !== '') return null;
    return `${target.pathname.slice(basePath.length)}${target.search}`;
  }

  /**
   * Spends a turn a worker already waited for (`heldTurns`), or reserves the store's next one and
   * waits for it when it is near; a turn further away is not waited for inside the call.
   */
  async #waitForTurn(store: StoreConnection, request: PlatformRequest): Promise<void> {
    if (store.heldTurns && store.heldTurns.remaining > 0) {
      store.heldTurns.remaining -= 1;
      return;
    }
    const waitMs = await this.options.pacer.reserve(this.#paced(store));
    if (waitMs > (store.maxTurnWaitMs ?? this.options.maxInlineRetryAfterMs)) {
      throw this.#error(store, request, `not sent: the store's next turn is in ${Math.ceil(waitMs)} ms`, {
        retryable: true,
        retryAfterMs: Math.ceil(waitMs),
        sent: false,
      });
    }
    if (waitMs <= 0) return;
    try {
      await delay(waitMs, undefined, store.stopping && { signal: store.stopping });
    } catch (aborted) {
      if (!store.stopping?.aborted) throw aborted;
      // The caller stops: the turn it will never use goes back to the store's other callers.
      await this.options.pacer.release(this.#paced(store), 1);
      throw this.#error(store, request, 'not sent: the caller stopped while waiting for the store\'s turn', { retryable: true, retryAfterMs: null, sent: false });
    }
  }

  #paced(store: StoreConnection) {
    return { storeId: store.storeId, platform: this.options.platform };
  }

  async #exchange(url: string, store: StoreConnection, request: PlatformRequest): Promise<RawResponse> {
    const headers: Record<string, string> = {
      Accept: 'application/json',
      // undici's request() sends none, and some platforms refuse requests without one.
      'User-Agent': 'order-routing-service',
      ...this.options.authHeaders(store.accessToken),
    };
    if (request.body !== undefined) headers['Content-Type'] = 'application/json';
    if (request.idempotencyKey !== undefined) headers['Idempotency-Key'] = request.idempotencyKey;
    try {
      // undici's request() rather than fetch(): a fraction of the CPU per call. It never follows
      // redirects, which would send the access token wherever Location points.
      const response = await send(url, {
        method: request.method,
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal: AbortSignal.timeout(this.options.timeoutMs),
        ...(this.options.dispatcher && { dispatcher: this.options.dispatcher }),
      });
      const responseHeaders: ResponseHeaders = (name) => {
        const value = response.headers[name.toLowerCase()];
        return (Array.isArray(value) ? value.join(', ') : value) ?? null;
      };
      const retryAfter = response.headers['retry-after'];
      const { text, oversized } = await readBounded(response.body, request.maxBodyBytes ?? ANSWER_MAX_BYTES);
      noteExchange({ method: request.method, path: request.path, body: request.body, secret: store.accessToken, status: response.statusCode, text });
      return {
        status: response.statusCode,
        headers: responseHeaders,
        retryAfter: (Array.isArray(retryAfter) ? retryAfter[0] : retryAfter) ?? null,
        text,
        oversized,
      };
    } catch (error) {
      noteExchange({ method: request.method, path: request.path, body: request.body, secret: store.accessToken, status: null, text: null });
      const reason = describeNetworkFailure(error, this.options.timeoutMs);
      throw this.#error(store, request, `failed: ${reason}`, { retryable: true });
    }
  }

  #read<T>(response: RawResponse, store: StoreConnection, request: PlatformRequest, read: ResponseReader<T>): T {
    const unexpected = (detail: string) =>
      this.#error(store, request, `answered ${response.status} with ${detail}`, {
        retryable: false,
        status: response.status,
      });
    if (response.oversized) {
      // The same answer would come again: a permanent failure, kept by the job like any other 2xx it
      // cannot read (a list page is read again with fewer entries: listing.ts readShrinking).
      const maxBytes = request.maxBodyBytes ?? ANSWER_MAX_BYTES;
      const { message } = unexpected(`a body over ${maxBytes} bytes (not read further)`);
      throw new AnswerTooLarge(message, response.status, maxBytes);
    }
    let body: unknown;
    try {
      body = response.text === '' ? null : JSON.parse(response.text);
    } catch {
      throw unexpected('a body that is not JSON');
    }
    try {
      return read(body, response.headers, response.status);
    } catch (error) {
      if (error instanceof PayloadError) throw unexpected(`an unexpected body: ${error.message}`);
      throw error;
    }
  }

  #httpError(response: RawResponse, store: StoreConnection, request: PlatformRequest): PlatformError {
    const { status } = response;
    const detail = describeErrorBody(response.text, store.accessToken) || STATUS_CODES[status] || 'no details';
    const retryAfterMs = parseRetryAfter(response.retryAfter);
    // Capped whatever the status: a 503 asking for a year would otherwise park the attempt's next try
    // a year away (a `failed` row with a live message, which the sweep leaves alone).
    const askedMs = status === 429 ? (retryAfterMs ?? DEFAULT_RETRY_AFTER_MS) : retryAfterMs;
    return this.#error(store, request, `answered ${status}: ${detail}`, {
      retryable: status === 429 || status >= 500,
      status,
      retryAfterMs: askedMs === null ? null : Math.min(askedMs, this.options.maxRetryAfterMs),
      answer: status === 409 ? jsonOf(response.text) : undefined,
    });
  }

  /** Every message is redacted, then made storable: it becomes a job's errorMessage and its audit entry. */
  #error(store: StoreConnection, request: PlatformRequest, outcome: string, fields: ErrorFields): PlatformError {
    const message = `${this.options.platform} ${store.shopDomain}: ${request.method} ${request.path} ${outcome}`;
    return new PlatformError(
      storableText(redactSecret(message, store.accessToken), MAX_MESSAGE_LENGTH),
      fields.retryable,
      fields.status ?? null,
      fields.retryAfterMs ?? null,
      fields.sent ?? true,
      fields.answer,
    );
  }
}

/** A refusal's body as JSON, when it is JSON of at most REFUSAL_ANSWER_MAX_BYTES (else undefined). */
function jsonOf(text: string): unknown {
  if (text === '' || text.length > REFUSAL_ANSWER_MAX_BYTES) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A refusal body longer than this is not parsed for what it says (its detail is still described). */
const REFUSAL_ANSWER_MAX_BYTES = 64 * 1024;

/** How much of an oversized answer is kept as text: far more than any error detail keeps (MAX_DETAIL_LENGTH). */
const OVERSIZED_TEXT_BYTES = 64 * 1024;

/**
 * The body's text when it is no longer than `maxBytes`. A longer body is not read further (its
 * connection is closed), so a platform answering hundreds of megabytes costs this process no more
 * than the bound; its first OVERSIZED_TEXT_BYTES are its text, since an error body's start is still
 * its best detail, and the caller decides what an oversized answer means.
 */
async function readBounded(body: AsyncIterable<Buffer> & { destroy(): unknown }, maxBytes: number): Promise<{ text: string; oversized: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size + chunk.length > maxBytes) {
      body.destroy();
      // Only the start of an oversized answer is ever read (an error's detail): joining and decoding
      // all of it would make two more copies the size of the bound (a list page read again smaller).
      chunks.push(chunk);
      return { text: Buffer.concat(chunks, Math.min(size + chunk.length, OVERSIZED_TEXT_BYTES)).toString('utf8'), oversized: true };
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { text: Buffer.concat(chunks).toString('utf8'), oversized: false };
}

/** Retry-After in milliseconds, from delay-seconds or an HTTP date; null when absent or unreadable. */
function parseRetryAfter(header: string | null, now: number = Date.now()): number | null {
  if (header === null || header.trim() === '') return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.ceil(seconds * 1000) : null;
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * A one-line summary of an error body (`{"errors": ...}`, `{"message": ...}` or plain text), safe to
 * keep. The token is redacted first, from the text as the platform wrote it (a JSON body's strings
 * decoded), then again once whitespace is collapsed, and only then is the text cut and made
 * storable: redacting after the cut let a token cut in half, or one whose whitespace was collapsed,
 * through.
 */
function describeErrorBody(text: string, secret: string): string {
  let summary = text;
  try {
    const parsed: unknown = JSON.parse(text);
    summary = summarise(errorContent(parsed));
  } catch {
    // Not JSON (an HTML error page from a proxy, say): the text itself is the best detail.
  }
  const collapsed = redactSecret(summary, secret).replace(/\s+/g, ' ').trim();
  return storableText(redactSecret(collapsed, secret), MAX_DETAIL_LENGTH);
}

function errorContent(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  for (const key of ['errors', 'error', 'message']) {
    if (key in body) return (body as Record<string, unknown>)[key];
  }
  return body;
}

function summarise(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(summarise).join(', ');
  if (value !== null && typeof value === 'object') {
    return Object.entries(value)
      .map(([key, inner]) => `${key}: ${summarise(inner)}`)
      .join('; ');
  }
  return String(value);
}

function describeNetworkFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === 'TimeoutError') return `timed out after ${timeoutMs} ms`;
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  if (!(cause instanceof Error)) return String(cause);
  const code = (cause as NodeJS.ErrnoException).code;
  return code === undefined ? cause.message : `${cause.message} (${code})`;
}
