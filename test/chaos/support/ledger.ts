/**
 * The run-wide record behind the secrets check (issue 6, item 5): every secret a chaos file hands to
 * the service (store tokens, webhook secrets, passwords, raw API keys once created), every response
 * the service gave and every log line it wrote. Each file checks its own responses and logs at its
 * end; `zz-secrets.test.ts` checks all of them against all secrets of the run.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, inject, it } from 'vitest';

export type SecretKind = 'password' | 'store access token' | 'webhook secret' | 'raw API key' | 'webhook endpoint signing secret' | 'database password';

export interface SecretRecord {
  kind: SecretKind;
  value: string;
  file: string;
}

export interface ResponseRecord {
  file: string;
  /** `METHOD path`, for the failure message. */
  label: string;
  status: number;
  /** Headers and body as received. */
  text: string;
  /** Values this response may contain: the raw key in its own creation response. */
  allowed: string[];
}

export interface LogRecord {
  file: string;
  source: string;
  line: string;
}

const FILES = { secrets: 'secrets.jsonl', responses: 'responses.jsonl', logs: 'logs.jsonl' } as const;

function fileName(): string {
  const name = expect.getState().testPath ?? 'unknown';
  return path.basename(name);
}

function dir(): string {
  return inject('chaosLedgerDir');
}

function append(kind: keyof typeof FILES, record: object): void {
  appendFileSync(path.join(dir(), FILES[kind]), `${JSON.stringify(record)}\n`);
}

function readAll<T>(kind: keyof typeof FILES): T[] {
  const file = path.join(dir(), FILES[kind]);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as T);
}

/**
 * Only values that cannot turn up by chance are tracked: a fuzzed one-letter "token" would be found
 * everywhere. Everything the suite's own factories make is long and random.
 */
export function isDistinctive(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 12 && new Set(value).size >= 6;
}

const seen = new Set<string>();

/** Log sources of this file, with how many of their lines are already in the ledger. */
const taps: { source: string; lines: () => readonly string[]; recorded: number }[] = [];

export const ledger = {
  secret(kind: SecretKind, value: unknown): void {
    if (!isDistinctive(value) || seen.has(value)) return;
    seen.add(value);
    append('secrets', { kind, value, file: fileName() } satisfies SecretRecord);
  },

  response(label: string, status: number, headers: Headers | Record<string, string>, body: string, allowed: string[] = []): void {
    const headerText = (headers instanceof Headers ? [...headers.entries()] : Object.entries(headers)).map(([k, v]) => `${k}: ${v}`).join('\n');
    append('responses', { file: fileName(), label, status, text: `${headerText}\n\n${body}`, allowed } satisfies ResponseRecord);
  },

  logs(source: string, lines: readonly string[]): void {
    if (lines.length === 0) return;
    const file = fileName();
    appendFileSync(path.join(dir(), FILES.logs), lines.map((line) => `${JSON.stringify({ file, source, line } satisfies LogRecord)}\n`).join(''));
  },

  /** Records the lines `lines()` returns now and later (at every `flush`), e.g. a service's log. */
  watch(source: string, lines: () => readonly string[]): void {
    taps.push({ source, lines, recorded: 0 });
  },

  /** Records the watched lines not recorded yet; call it once a service has stopped, too. */
  flush(): void {
    for (const tap of taps) {
      const lines = tap.lines();
      ledger.logs(tap.source, lines.slice(tap.recorded));
      tap.recorded = lines.length;
    }
  },

  secrets: () => readAll<SecretRecord>('secrets'),
  responses: () => readAll<ResponseRecord>('responses'),
  logLines: () => readAll<LogRecord>('logs'),
};

/** The ways a secret could be written down: as is, JSON-escaped, percent-encoded. */
function formsOf(value: string): string[] {
  return [...new Set([value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value)])];
}

export interface Leak {
  where: string;
  kind: SecretKind;
  /** The first characters only: the report must not leak the secret either. */
  secretStart: string;
}

/** Every place one of `secrets` shows up in `responses` or `logs`. */
export function findLeaks(secrets: SecretRecord[], responses: ResponseRecord[], logs: LogRecord[]): Leak[] {
  const leaks: Leak[] = [];
  const patterns = secrets.map((secret) => ({ secret, forms: formsOf(secret.value) }));
  const scan = (text: string, where: string, allowed: string[] = []) => {
    for (const { secret, forms } of patterns) {
      if (allowed.includes(secret.value)) continue;
      if (forms.some((form) => text.includes(form))) leaks.push({ where, kind: secret.kind, secretStart: `${secret.value.slice(0, 6)}…` });
    }
  };
  for (const response of responses) scan(response.text, `${response.file}: response ${response.status} to ${response.label}`, response.allowed);
  for (const log of logs) scan(log.line, `${log.file}: log line of ${log.source}: ${log.line.slice(0, 160)}`);
  return leaks;
}

/**
 * The per-file check, run as the file's last test: nothing this file received or logged contains a
 * secret known to the run so far (its own included).
 */
export function itLeaksNoSecret(): void {
  it('leaks no secret in any response or log line it saw', () => {
    ledger.flush();
    const file = fileName();
    const secrets = ledger.secrets();
    const responses = ledger.responses().filter((record) => record.file === file);
    const logs = ledger.logLines().filter((record) => record.file === file);
    expect(responses.length + logs.length, 'the file recorded nothing to check').toBeGreaterThan(0);
    expect(findLeaks(secrets, responses, logs)).toEqual([]);
  });
}
