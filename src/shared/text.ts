/**
 * Text from outside (a platform's answer, an order's fields) made safe to store. PostgreSQL refuses
 * a NUL in `text` and `jsonb`, and a lone UTF-16 surrogate in `jsonb` (and a JSON parameter carries
 * every write of the hot paths), so either one in an error message used to make the whole write fail.
 */

const NUL = /\u0000/g;
/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const ELLIPSIS = '…';

/** A NUL, or a UTF-16 surrogate not part of a pair (the `u` flag reads a pair as one code point). */
const UNSTORABLE = /[\u0000\uD800-\uDFFF]/u;

/**
 * The dotted path of the first key or string value with unstorable text ('' for the value itself),
 * or null. Walks with an explicit stack, not recursion: a 1 MiB body can nest half a million levels
 * deep (`[[[[…]]]]`), and a recursive walk overflowed the call stack inside the body parser's
 * callback, an uncaught exception that took the whole process down.
 */
export function unstorablePathIn(value: unknown): string | null {
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
  return secretRedactor(secret)(text);
}

/**
 * `redactSecret` for one secret, its forms and windows worked out once: for redacting several
 * texts with the same secret (an attempt's request and response excerpts).
 */
export function secretRedactor(secret: string): (text: string) => string {
  if (secret === '') return (text) => text;
  const forms = formsOf(secret);
  const windows = windowsOf(forms);
  return (text) => {
    let redacted = text;
    for (const form of forms) redacted = redacted.replaceAll(form, REDACTED);
    return redactRuns(redacted, windows);
  };
}

/** A secret's forms, and the rolling hashes of their MIN_REDACTED_RUN-character pieces (to find those fast). */
interface Windows {
  forms: string[];
  hashes: Set<number>;
}

const HASH_BASE = 257;
/** HASH_BASE to the power MIN_REDACTED_RUN - 1, modulo 2^32: what the leaving character weighs. */
const HASH_POWER = Array.from({ length: MIN_REDACTED_RUN - 1 }).reduce<number>((power) => Math.imul(power, HASH_BASE), 1);

/** The hash of the window starting at `start`, once the one before it was `previous` (none: computed whole). */
function rolled(text: string, start: number, previous?: number): number {
  if (previous === undefined) {
    let hash = 0;
    for (let k = 0; k < MIN_REDACTED_RUN; k++) hash = (Math.imul(hash, HASH_BASE) + text.charCodeAt(start + k)) | 0;
    return hash;
  }
  return (Math.imul(previous - Math.imul(text.charCodeAt(start - 1), HASH_POWER), HASH_BASE) + text.charCodeAt(start + MIN_REDACTED_RUN - 1)) | 0;
}

/** The hashes of every MIN_REDACTED_RUN-character piece of the forms. */
function windowsOf(forms: string[]): Windows {
  const hashes = new Set<number>();
  for (const form of forms) {
    let hash: number | undefined;
    for (let i = 0; i + MIN_REDACTED_RUN <= form.length; i++) hashes.add((hash = rolled(form, i, hash)));
  }
  return { forms, hashes };
}

/** Whether this piece of text is a piece of one of the forms (checked only when its hash matched). */
const isPiece = (windows: Windows, piece: string) => windows.forms.some((form) => form.includes(piece));

/**
 * Replaces each stretch of `text` covered by MIN_REDACTED_RUN-character windows that occur in one
 * of the forms (`windows`): every piece of a form at least that long is covered, so none survives.
 * The text's windows are hashed as they roll (no string per position); a matching hash is checked.
 */
function redactRuns(text: string, windows: Windows): string {
  if (text.length < MIN_REDACTED_RUN || windows.hashes.size === 0) return text;
  let result = '';
  let kept = 0;
  let runEnd = -1;
  let hash: number | undefined;
  for (let i = 0; i + MIN_REDACTED_RUN <= text.length; i++) {
    hash = rolled(text, i, hash);
    if (windows.hashes.has(hash) && isPiece(windows, text.slice(i, i + MIN_REDACTED_RUN))) {
      if (i > runEnd) {
        result += text.slice(kept, i) + REDACTED;
      }
      runEnd = i + MIN_REDACTED_RUN;
      kept = runEnd;
    }
  }
  return kept === 0 ? text : result + text.slice(kept);
}
