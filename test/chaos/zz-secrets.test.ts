/**
 * Issue 6, item 5 (secrets), over the whole suite: runs after every other chaos file (see
 * support/sequencer.ts) and matches every response any of them received from the service and every
 * log line any service wrote (in-process and child processes, across crashes and outages) against
 * every secret any of them handed over: store access tokens, webhook secrets, user passwords, raw
 * API keys (allowed only in their own creation response) and the embedded database's password.
 */
import { describe, expect, inject, it } from 'vitest';
import { findLeaks, ledger } from './support/ledger.ts';

describe('secrets across the whole chaos suite', () => {
  it('finds a planted secret in every form it could be written in (the check has teeth)', () => {
    const secret = { kind: 'webhook secret' as const, value: 'whsec_Plant/ed+Secret"1', file: 'self-check' };
    const lines = [`{"msg":"x","secret":${JSON.stringify(secret.value)}}`, `GET /v1/x?s=${encodeURIComponent(secret.value)}`, `plain ${secret.value}`];
    const leaks = findLeaks([secret], [], lines.map((line) => ({ file: 'self-check', source: 'test', line })));
    expect(leaks).toHaveLength(3);
    expect(findLeaks([secret], [{ file: 'self-check', label: 'POST /v1/api_keys', status: 201, text: secret.value, allowed: [secret.value] }], [])).toEqual([]);
  });

  // Skipped only when this file runs alone (the sequencer counts the files before it): after any
  // other chaos file, a ledger with nothing in it is a failure, not a reason to skip.
  it.skipIf(inject('chaosFilesBefore') === 0)('no response and no log line of any chaos file contains a secret after its creation response', () => {
    const secrets = ledger.secrets();
    const responses = ledger.responses();
    const logs = ledger.logLines();
    expect(responses.length, 'responses the other chaos files recorded (none: the ledger was not shared with this file)').toBeGreaterThan(0);
    // The check covered every kind of secret and every file that talks to the service.
    expect(new Set(secrets.map((secret) => secret.kind))).toEqual(new Set(['password', 'store access token', 'webhook secret', 'raw API key', 'database password', 'webhook endpoint signing secret']));
    const files = new Set([...responses, ...logs].map((record) => record.file));
    expect(files.size, [...files].join(', ')).toBeGreaterThanOrEqual(5);
    expect(logs.length).toBeGreaterThan(1_000);
    expect(responses.length).toBeGreaterThan(1_000);
    expect(findLeaks(secrets, responses, logs)).toEqual([]);
  });
});
