/**
 * GET /metrics while the database is away. The operator learns of an outage from the metrics of the
 * processes that live through it (README, Operations: HTTP durations by route and status, queue
 * depth, platform calls…); the 503s every webhook and API request answers meanwhile (README,
 * Reliability, "Database outage") are counted in `http_request_duration_seconds`. A scrape must
 * still answer with what the process itself knows; the series read from the database at scrape
 * time (queue depth, divergences, the reconciliation lag, the oldest pending delivery) may be
 * missing, but one failing read must not fail the whole scrape: Prometheus would then record the
 * process as down (`up == 0`) and lose every series of the incident.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './support/database.ts';
import { DbLink } from './support/db-link.ts';
import { startTestService, type TestService } from './support/service.ts';
import { waitFor } from './support/wait.ts';

let link: DbLink;
let service: TestService;

beforeAll(async () => {
  link = await DbLink.open(await createTestDatabase());
  service = await startTestService({ DATABASE_URL: link.databaseUrl, JWT_SECRET: randomBytes(32).toString('hex') });
}, 60_000);

afterAll(async () => {
  link.restore();
  await service?.stop();
  await link?.close();
});

describe('GET /metrics while the database is away', () => {
  it("answers 200 with the process's own series, including the 503s of the outage, within the readiness bound", async () => {
    expect((await fetch(`${service.url}/metrics`)).status).toBe(200);
    link.cut();
    // A request during the outage: answered 503 (README), and counted.
    const during = await service.api.get('/v1/reseller_stores', { token: 'sk_test_' + 'x'.repeat(40) });
    expect(during.status).toBe(503);
    const started = Date.now();
    const response = await fetch(`${service.url}/metrics`, { signal: AbortSignal.timeout(10_000) });
    const text = await response.text();
    expect({ status: response.status, withinMs: Date.now() - started < 5_000 }, text.slice(0, 300)).toEqual({ status: 200, withinMs: true });
    expect(text).toMatch(/http_request_duration_seconds_count\{[^}]*status="503"[^}]*\} [1-9]/);
    expect(text).toContain('process_cpu_user_seconds_total');
    // What could not be read is left out or unknown, never a stale or made-up figure.
    expect(text).not.toMatch(/^queue_depth\{/m);
    expect(text).toMatch(/^webhook_delivery_oldest_pending_age_seconds NaN$/im);
    link.restore();
    // Back: the database's figures return.
    await waitFor(async () => /^queue_depth\{queue="sync-job.process"\} \d+$/m.test(await (await fetch(`${service.url}/metrics`)).text()), 20_000, 'queue_depth again');
  }, 60_000);
});
