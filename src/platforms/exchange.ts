import { AsyncLocalStorage } from 'node:async_hooks';
import { REDACTED, secretRedactor, wellFormed } from '../shared/text.ts';

/**
 * What an attempt's timeline shows of its last platform call: a redacted, bounded excerpt of what
 * was sent and of what came back (the console's "Request and response"). Headers are never kept
 * (they carry the access token); bodies are cut at EXCERPT_MAX_BYTES; the store's access token (in
 * every form `redactSecret` knows), secret-looking fields (token, secret, password, signature,
 * authorization, api key, cookie) and the customer's personal data (emails, phone numbers, names and
 * addresses) are replaced by `[redacted]`. See README, Operations, "Request and response excerpts".
 */
export interface ExchangeRequest {
  method: string;
  /** The path and query below the store's base URL. */
  path: string;
  /** The JSON body sent, redacted and bounded; null when the call had none (a GET). */
  body: string | null;
}

export interface ExchangeResponse {
  status: number;
  /** The body's start, redacted and bounded; null when it was empty. */
  body: string | null;
}

export interface Exchange {
  request: ExchangeRequest;
  /** Null when no answer came (a timeout, a refused connection). */
  response: ExchangeResponse | null;
}

/** One call as the HTTP client saw it, kept as references: the excerpt is only built for the attempt's last call. */
export interface RawExchange {
  method: string;
  path: string;
  body: unknown;
  /** The store's access token, to redact from the excerpt. */
  secret: string;
  status: number | null;
  text: string | null;
}

/** The most of a body an excerpt keeps, in UTF-8 bytes. */
export const EXCERPT_MAX_BYTES = 2048;
/** A body larger than this is not parsed to be redacted field by field: only its size is told. */
const PARSED_MAX_BYTES = 256 * 1024;

/** Field names whose values are secrets or personal data, compared lower-cased without `_` and `-`. */
const SECRET_FIELD = /token|secret|password|passwd|signature|hmac|authorization|apikey|cookie|credential/;
const PERSONAL_FIELDS = new Set([
  'email', 'phone', 'customer', 'billing', 'shipping', 'shippingaddress', 'billingaddress', 'address', 'address1', 'address2',
  'firstname', 'lastname', 'fullname', 'company', 'zip', 'postcode', 'postalcode', 'city', 'province', 'latitude', 'longitude',
]);
/** An email address, also URL-encoded (in a query); its parts bounded, so any text is scanned in linear time. */
const EMAIL = /[\w.+-]{1,64}(?:@|%40)[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63})+/gi;
const withoutEmails = (text: string) => (text.includes('@') || text.includes('%40') ? text.replace(EMAIL, REDACTED) : text);
/** A JSON field with a redacted name and a scalar value, in text that could not be parsed. */
const FIELD_IN_TEXT = /"([A-Za-z0-9_-]+)"(\s*:\s*)("(?:[^"\\]|\\.)*"|[-\w.+]+)/g;

/** The answer for field names already seen (platforms use a few dozen): every excerpt of every attempt asks for each of its fields. */
const redactedFields = new Map<string, boolean>();
const REDACTED_FIELDS_KEPT = 1_024;

const isRedactedField = (key: string) => {
  const known = redactedFields.get(key);
  if (known !== undefined) return known;
  const name = key.toLowerCase().replace(/[-_]/g, '');
  const redacted = SECRET_FIELD.test(name) || PERSONAL_FIELDS.has(name);
  // A body's own keys (ids as keys) could be endless; past the bound names are worked out each time.
  if (redactedFields.size < REDACTED_FIELDS_KEPT) redactedFields.set(key, redacted);
  return redacted;
};

function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return withoutEmails(value);
  if (Array.isArray(value)) return value.map(redactValue);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, isRedactedField(key) && inner !== null ? REDACTED : redactValue(inner)]));
  }
  return value;
}

function redactText(text: string): string {
  return withoutEmails(text.replace(FIELD_IN_TEXT, (whole, key: string, colon: string) => (isRedactedField(key) ? `"${key}"${colon}"${REDACTED}"` : whole)));
}

/** At most EXCERPT_MAX_BYTES of `text`, cut on a character boundary, with a marker saying how much was left out. */
export function bounded(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= EXCERPT_MAX_BYTES) return text;
  const kept = bytes.subarray(0, EXCERPT_MAX_BYTES).toString('utf8').replace(/\uFFFD+$/, '');
  return `${kept}… [cut: ${bytes.length - Buffer.byteLength(kept)} more bytes]`;
}

/** A body's excerpt: parsed JSON is redacted field by field; other text by its secrets and emails. */
function excerptOf(body: unknown, redactSecret: (text: string) => string): string | null {
  let text: string;
  if (typeof body === 'string') {
    if (body === '') return null;
    if (Buffer.byteLength(body) > PARSED_MAX_BYTES) return `[a body of ${Buffer.byteLength(body)} bytes, not kept]`;
    try {
      text = JSON.stringify(redactValue(JSON.parse(body)));
    } catch {
      text = redactText(body);
    }
  } else {
    if (body === undefined || body === null) return null;
    text = JSON.stringify(redactValue(body));
  }
  // The token is redacted before the cut, so no piece of it survives at the edge.
  return wellFormed(bounded(redactSecret(text)));
}

/** The excerpt of one call. */
export function exchangeOf(raw: RawExchange): Exchange {
  const redactSecret = secretRedactor(raw.secret);
  return {
    request: {
      method: raw.method,
      path: wellFormed(bounded(withoutEmails(redactSecret(raw.path)))),
      body: excerptOf(raw.body, redactSecret),
    },
    response: raw.status === null ? null : { status: raw.status, body: excerptOf(raw.text ?? '', redactSecret) },
  };
}

interface Recorder {
  last: RawExchange | null;
}

/** The attempt a platform call belongs to, if any: set by `captureExchanges` around an attempt's work. */
const current = new AsyncLocalStorage<Recorder>();

/**
 * Runs `work` (an attempt's platform calls) noting its calls; `exchange()` is the excerpt of the
 * last one, or null when it made none. Outside such a run, calls note nothing.
 */
export function captureExchanges<T>(work: () => Promise<T>): { done: Promise<T>; exchange: () => Exchange | null } {
  const recorder: Recorder = { last: null };
  const done = current.run(recorder, work);
  return {
    done,
    exchange: () => {
      if (!recorder.last) return null;
      try {
        return exchangeOf(recorder.last);
      } catch {
        return null;
      }
    },
  };
}

/** Called by the HTTP client for every call that was sent: a reference is kept, nothing is copied. */
export function noteExchange(raw: RawExchange): void {
  const recorder = current.getStore();
  if (recorder) recorder.last = raw;
}
