/**
 * Text from outside (a platform's answer, an order's fields) made safe to store. PostgreSQL refuses
 * a NUL in `text` and `jsonb`, and a lone UTF-16 surrogate in `jsonb` (and a JSON parameter carries
 * every write of the hot paths), so either one in an error message used to make the whole write fail.
 */

const NUL = /\u0000/g;
/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const ELLIPSIS = '…';

/** Without NUL characters and lone surrogates. */
export function wellFormed(text: string): string {
  return text.replace(NUL, '').replace(LONE_SURROGATE, '');
}

/**
 * Storable text of at most `maxLength` characters (code points, as PostgreSQL counts them): NUL and
 * lone surrogates removed, and when too long cut on a code point boundary (never between the two
 * halves of an emoji) with an ellipsis.
 */
export function storableText(text: string, maxLength: number): string {
  const clean = wellFormed(text);
  // Fast path: UTF-16 length is at least the code point count.
  if (clean.length <= maxLength) return clean;
  const codePoints = Array.from(clean);
  if (codePoints.length <= maxLength) return clean;
  return codePoints.slice(0, Math.max(0, maxLength - 1)).join('') + ELLIPSIS;
}

/** Whether a platform's id can be kept as it is: 1 to `maxLength` characters, none of them a control character or a lone surrogate. */
export function isStorableId(id: string, maxLength: number): boolean {
  // eslint-disable-next-line no-control-regex
  return id.length > 0 && id === wellFormed(id) && !/[\u0000-\u001f\u007f]/.test(id) && Array.from(id).length <= maxLength;
}

/**
 * Every form in which `secret` can show up in a platform's text: as sent, JSON-escaped,
 * URL-encoded, base64 (e.g. inside a Basic credential), with its whitespace collapsed, and trimmed.
 * Longest first, so a longer form is replaced before a shorter one inside it.
 */
function formsOf(secret: string): string[] {
  const forms = new Set<string>([
    secret,
    JSON.stringify(secret).slice(1, -1),
    encodeURIComponent(secret),
    encodeURI(secret),
    Buffer.from(secret).toString('base64').replace(/=+$/, ''),
    secret.replace(/\s+/g, ' '),
    secret.replace(/\s+/g, ' ').trim(),
    secret.trim(),
  ]);
  return [...forms].filter((form) => form.length > 0).sort((a, b) => b.length - a.length);
}

export const REDACTED = '[redacted]';

/** The shortest piece of a secret redacted on its own: a platform quoting the start of a long token. */
export const MIN_REDACTED_RUN = 12;

/**
 * `text` with every form of `secret` replaced by [redacted], and then every run of at least
 * MIN_REDACTED_RUN characters taken from one of those forms (a platform echoing the first 200
 * characters of a 391-character token); run it before the text is normalised or cut.
 */
export function redactSecret(text: string, secret: string): string {
  if (secret === '') return text;
  const forms = formsOf(secret);
  let redacted = text;
  for (const form of forms) redacted = redacted.replaceAll(form, REDACTED);
  return redactRuns(redacted, forms);
}

/**
 * Replaces each stretch of `text` covered by MIN_REDACTED_RUN-character windows that occur in one
 * of `forms`: every piece of a form at least that long is covered, so none survives.
 */
function redactRuns(text: string, forms: string[]): string {
  if (text.length < MIN_REDACTED_RUN) return text;
  const windows = new Set<string>();
  for (const form of forms) {
    for (let i = 0; i + MIN_REDACTED_RUN <= form.length; i++) windows.add(form.slice(i, i + MIN_REDACTED_RUN));
  }
  if (windows.size === 0) return text;
  let result = '';
  let kept = 0;
  let runEnd = -1;
  for (let i = 0; i + MIN_REDACTED_RUN <= text.length; i++) {
    if (!windows.has(text.slice(i, i + MIN_REDACTED_RUN))) continue;
    if (i > runEnd) {
      result += text.slice(kept, i) + REDACTED;
    }
    runEnd = i + MIN_REDACTED_RUN;
    kept = runEnd;
  }
  return kept === 0 ? text : result + text.slice(kept);
}
