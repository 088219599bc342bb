/**
 * A job whose message waits in its store's line with an estimate (beyond the booking horizon), then
 * goes away before its turn (the job cancelled, retried by hand or finished meanwhile), gives its
 * place back when its stale message comes back: before, the line kept it, and once the members still
 * waiting had booked, the store's new work waited behind a line of no one (one spacing per member
 * gone: at 5 calls a second, a flash sale with 500 orders cancelled in line idled the supplier 100 s).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sendWebhook, startSandbox, type Sandbox } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { startTestService, type TestService } from './support/service.ts';
import { lineOf, newOrderId } from './support/sync-jobs.ts';
import { ORDERS_PATH } from './support/webhooks.ts';
import { waitFor } from './support/wait.ts';

let sandbox: Sandbox;
let service: TestService;
beforeAll(async () => {
  sandbox = await startSandbox();
  service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, PLATFORM_PACING: 'platform_a=5:10' });
}, 60_000);
afterAll(async () => {
  await service?.stop();
  await sandbox?.close();
});

it("a stale message that waited in its store's line gives its place back; one that did not leaves the line as it is", async () => {
  const user = await registerUser(service.api);
  const webhookSecret = `whsec_${randomBytes(12).toString('hex')}`;
  const reseller = await createResellerStore(service.api, user.token, { platform: 'platform_a', webhookSecret });
  await createSourceStore(service.api, user.token, reseller.id, { platform: 'platform_a', vendorTag: 'LeaverCo' });
  const payload = sandbox.buildOrderPayload('platform_a', { id: Number(newOrderId()), lines: [lineOf('LeaverCo')] });
  const answer = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: reseller.shopDomain, secret: webhookSecret, topic: 'orders/create', payload });
  const [jobId] = (answer.body as { syncJobIds: string[] }).syncJobIds;
  await waitFor(async () => (await queryRows<{ status: string }>(service.databaseUrl, 'select status from sync_jobs where id = $1', [jobId]))[0]?.status === 'completed', 10_000, 'the job placed');
  // The supplier's bucket, its line ending 5 s from now (25 members at 5 a second).
  const [bucket] = await queryRows<{ store_id: string }>(service.databaseUrl, 'select store_id from store_pacing');
  await queryRows(service.databaseUrl, "update store_pacing set next_at = now(), queued_until = now() + interval '5 seconds' where store_id = $1", [bucket!.store_id]);
  const lineEnd = async () => Number((await queryRows<{ ms: string }>(service.databaseUrl, 'select extract(epoch from queued_until) * 1000 as ms from store_pacing where store_id = $1', [bucket!.store_id]))[0]!.ms);

  const deliver = async (data: Record<string, unknown>) => {
    const id = randomUUID();
    await queryRows(service.databaseUrl, "insert into pgboss.job (id, name, data) values ($1::uuid, 'sync-job.process', $2::jsonb)", [id, JSON.stringify(data)]);
    await waitFor(async () => (await queryRows(service.databaseUrl, "select 1 from pgboss.job where id = $1::uuid and state in ('created', 'active', 'retry')", [id])).length === 0, 10_000, 'the message settled');
  };
  // A stale message of the (finished) job that did not wait in the line: the line is as it was.
  const before = await lineEnd();
  await deliver({ syncJobId: jobId });
  expect(await lineEnd()).toBe(before);
  // One that waited in it with an estimate: one spacing (200 ms) given back.
  await deliver({ syncJobId: jobId, estimatedAt: new Date(Date.now() + 3_000).toISOString() });
  expect(before - (await lineEnd())).toBeCloseTo(200, 3);
}, 60_000);

it("a stale message that waited in its store's line and is delivered again (its batch failed after the give-back) gives its place back once", async () => {
  const user = await registerUser(service.api);
  const webhookSecret = `whsec_${randomBytes(12).toString('hex')}`;
  const reseller = await createResellerStore(service.api, user.token, { platform: 'platform_a', webhookSecret });
  await createSourceStore(service.api, user.token, reseller.id, { platform: 'platform_a', vendorTag: 'LeaverTwiceCo' });
  const payload = sandbox.buildOrderPayload('platform_a', { id: Number(newOrderId()), lines: [lineOf('LeaverTwiceCo')] });
  const answer = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: reseller.shopDomain, secret: webhookSecret, topic: 'orders/create', payload });
  const [jobId] = (answer.body as { syncJobIds: string[] }).syncJobIds;
  await waitFor(async () => (await queryRows<{ status: string }>(service.databaseUrl, 'select status from sync_jobs where id = $1', [jobId]))[0]?.status === 'completed', 10_000, 'the job placed');
  const [bucket] = await queryRows<{ store_id: string }>(
    service.databaseUrl,
    'select p.store_id from store_pacing p where p.store_id not in (select store_id from store_pacing where queued_until is not null) order by p.next_at desc limit 1',
  );
  await queryRows(service.databaseUrl, "update store_pacing set next_at = now(), queued_until = now() + interval '8 seconds' where store_id = $1", [bucket!.store_id]);
  const lineEnd = async () => Number((await queryRows<{ ms: string }>(service.databaseUrl, 'select extract(epoch from queued_until) * 1000 as ms from store_pacing where store_id = $1', [bucket!.store_id]))[0]!.ms);

  // The statement that settles the stale message fails once (the database, a moment): the batch is delivered again.
  const id = randomUUID();
  await queryRows(service.databaseUrl, 'create sequence if not exists review16_settle_fault');
  await queryRows(
    service.databaseUrl,
    `create or replace function review16_settle_fault() returns trigger language plpgsql as $$
     begin
       if new.id = '${id}'::uuid and new.state = 'completed' and nextval('review16_settle_fault') = 1 then raise exception 'settle refused once (test)'; end if;
       return new;
     end $$`,
  );
  await queryRows(service.databaseUrl, 'create trigger review16_settle_fault before update on pgboss.job for each row execute function review16_settle_fault()');
  try {
    const before = await lineEnd();
    await queryRows(service.databaseUrl, "insert into pgboss.job (id, name, data) values ($1::uuid, 'sync-job.process', $2::jsonb)", [
      id,
      JSON.stringify({ syncJobId: jobId, estimatedAt: new Date(Date.now() + 3_000).toISOString() }),
    ]);
    await waitFor(async () => (await queryRows(service.databaseUrl, "select 1 from pgboss.job where id = $1::uuid and state = 'completed'", [id])).length === 1, 15_000, 'the message settled');
    expect(Number((await queryRows<{ n: string }>(service.databaseUrl, 'select last_value as n from review16_settle_fault'))[0]!.n)).toBeGreaterThanOrEqual(2);
    // One member went away: one spacing (200 ms) given back, not one per delivery.
    expect(before - (await lineEnd())).toBeCloseTo(200, 3);
  } finally {
    await queryRows(service.databaseUrl, 'drop trigger if exists review16_settle_fault on pgboss.job');
  }
}, 60_000);
