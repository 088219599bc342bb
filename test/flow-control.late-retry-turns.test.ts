/**
 * Review 10, flow control: an automatic retry of a job created over 12 hours ago looks its order up by
 * reference before creating it (src/sync-jobs/attempt.ts), two calls to the supplier; the worker must
 * reserve both turns before it takes the row. It decided how many from the row as read, before the
 * take counted the attempt, so a second attempt reserved one turn and made two calls.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sendWebhook, startSandbox, type Sandbox } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { startTestService, type TestService } from './support/service.ts';
import { lineOf, newOrderId } from './support/sync-jobs.ts';
import { ORDERS_PATH } from './support/webhooks.ts';
import { waitFor } from './support/wait.ts';

/** The supplier's limit: one call per 4 s, a burst of 3; the service keeps one of the burst back (pacing custom=0.25:3). */
const LIMIT = { perSecond: 0.25, burst: 3 };

let sandbox: Sandbox;
let service: TestService;
beforeAll(async () => {
  sandbox = await startSandbox();
  service = await startTestService({
    PLATFORM_BASE_URL: sandbox.baseUrlTemplate,
    PLATFORM_PACING: `custom=${LIMIT.perSecond}:${LIMIT.burst}`,
    SYNC_RETRY_BASE_DELAY_MS: '8000',
    RECONCILE_INTERVAL_MS: '0',
  });
}, 60_000);
afterAll(async () => {
  await service?.stop();
  await sandbox?.close();
});

it("a second attempt of a job over 12 h old reserves a turn for its lookup and one for its order: the supplier's limit holds", async () => {
  const user = await registerUser(service.api);
  const webhookSecret = `whsec_${randomBytes(12).toString('hex')}`;
  const reseller = await createResellerStore(service.api, user.token, { platform: 'platform_a', webhookSecret });
  const supplier = await createSourceStore(service.api, user.token, reseller.id, { platform: 'custom', vendorTag: 'LateCo' });
  // Each job's first attempt is refused (503); the retries come 8 s later.
  sandbox.setFaults(supplier.shopDomain, { rateLimit: LIMIT, failNext: 2, status: 503 });

  const jobIds: string[] = [];
  for (let i = 0; i < 2; i++) {
    const payload = sandbox.buildOrderPayload('platform_a', { id: Number(newOrderId()), lines: [lineOf('LateCo')] });
    const answer = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: reseller.shopDomain, secret: webhookSecret, topic: 'orders/create', payload });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    jobIds.push(...(answer.body as { syncJobIds: string[] }).syncJobIds);
  }
  // Jobs of an order placed 13 hours ago (a worker outage overnight, say): their retries look up first.
  await queryRows(service.databaseUrl, "update sync_jobs set created_at = created_at - interval '13 hours' where id = any($1::text[])", [jobIds]);

  await waitFor(
    async () => (await queryRows<{ status: string }>(service.databaseUrl, 'select status from sync_jobs where id = any($1::text[])', [jobIds])).every((row) => row.status === 'completed' || row.status === 'dead'),
    60_000,
    'both jobs settled',
  );
  const requests = sandbox.requestsFor(supplier.shopDomain).map((request) => `${request.method} ${request.path.split("?")[0]} ${request.at} ${request.status}`);
  // Each job: its refused POST, then its lookup and its order.
  expect(requests.filter((request) => request.endsWith(' 429')), requests.join('\n')).toEqual([]);
  const rows = await queryRows<{ status: string; attempts: number }>(service.databaseUrl, 'select status, attempts from sync_jobs where id = any($1::text[])', [jobIds]);
  expect(rows.map((row) => [row.status, row.attempts])).toEqual([
    ['completed', 2],
    ['completed', 2],
  ]);
  expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(2);
}, 90_000);
