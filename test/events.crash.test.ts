/**
 * The outbox across crashes (issue 16, item 1): a service process SIGKILLed after a change committed
 * and before its event was delivered, or while the delivery was in flight, delivers the event after
 * a restart on the same database, under the same `webhook-id`. Each service is its own process
 * (src/main.ts, as `npm start` runs it) on this file's database.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from './sandbox/server.ts';
import { ApiClient } from './support/api.ts';
import { ChildService } from './support/child-service.ts';
import { createTestDatabase, queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { registerLogs } from './support/leaks.ts';
import { waitFor } from './support/wait.ts';
import { WebhookReceiver } from './support/webhook-receiver.ts';

let sandbox: Sandbox;
let receiver: WebhookReceiver;
let env: Record<string, string>;
const children: ChildService[] = [];

beforeAll(async () => {
  sandbox = await startSandbox();
  receiver = await WebhookReceiver.start();
  env = {
    NODE_ENV: 'test',
    DATABASE_URL: await createTestDatabase(),
    PLATFORM_BASE_URL: sandbox.baseUrlTemplate,
    JWT_SECRET: randomBytes(32).toString('hex'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    AUTH_RATE_LIMIT_PER_MINUTE: '10000',
    WEBHOOK_DELIVERY_SCHEDULE_MS: '0,300,600',
  };
});

afterAll(async () => {
  for (const child of children) await child.kill();
  await receiver?.close();
  await sandbox?.close();
});

async function start(role: 'api' | 'all'): Promise<{ child: ChildService; api: ApiClient }> {
  const child = new ChildService({ ...env, ROLE: role });
  children.push(child);
  registerLogs(`child service (${role})`, child.lines);
  const run = await child.start();
  return { child, api: new ApiClient(run.url) };
}

async function kill(child: ChildService): Promise<void> {
  await child.kill();
}

async function endpointFor(api: ApiClient, user: TestUser, path: string) {
  const response = await api.post('/v1/webhook_endpoints', { token: user.token, body: { url: receiver.url(path), enabledEvents: ['sync_job.created'] } });
  expect(response.status).toBe(201);
  receiver.trust(path, [response.body.secret]);
}

it('a process killed after the change committed, before any delivery, delivers it after a restart', async () => {
  // Only the API runs: the change commits with its event and queued delivery, and nothing sends it.
  const first = await start('api');
  const user = await registerUser(first.api);
  await endpointFor(first.api, user, '/crash/before');
  const reseller = await createResellerStore(first.api, user.token);
  const supplier = await createSourceStore(first.api, user.token, reseller.id);
  const job = await first.api.post('/v1/sync_jobs', { token: user.token, body: { source_store_id: supplier.id, external_order_id: '880001' } });
  expect(job.status).toBe(201);
  await kill(first.child);
  expect(receiver.at('/crash/before')).toEqual([]);
  const [pending] = await queryRows<{ status: string }>(env.DATABASE_URL!, `select d.status from webhook_deliveries d join events e on e.id = d.event_id where e.type = 'sync_job.created' and e.payload like $1`, [`%${job.body.id}%`]);
  expect(pending).toEqual({ status: 'pending' });

  const second = await start('all');
  const [delivery] = await waitFor(async () => receiver.at('/crash/before').length > 0 && receiver.at('/crash/before'), 20_000, 'the delivery after the restart');
  expect(delivery!.verifiedBy).toEqual([0]);
  expect(delivery!.event).toMatchObject({ type: 'sync_job.created', data: { object: { id: job.body.id } } });
  await kill(second.child);
}, 60_000);

it('a process killed while a delivery is in flight delivers it again after a restart, same webhook-id', async () => {
  const first = await start('all');
  const user = await registerUser(first.api);
  await endpointFor(first.api, user, '/crash/during');
  receiver.behave('/crash/during', { hang: true });
  const reseller = await createResellerStore(first.api, user.token);
  const supplier = await createSourceStore(first.api, user.token, reseller.id);
  const job = await first.api.post('/v1/sync_jobs', { token: user.token, body: { source_store_id: supplier.id, external_order_id: '880002' } });
  expect(job.status).toBe(201);
  // The receiver holds the request: the attempt is under way when the process dies.
  await waitFor(async () => receiver.at('/crash/during').length === 1, 15_000, 'the delivery to be in flight');
  await kill(first.child);
  receiver.releaseHanging();
  receiver.behave('/crash/during', { status: 200 });

  await start('all');
  // pg-boss redelivers the message once the dead worker's heartbeat (10 s) lapses and its supervisor runs (every 10 s).
  const deliveries = await waitFor(async () => receiver.at('/crash/during').length >= 2 && receiver.at('/crash/during'), 45_000, 'the delivery again');
  expect(new Set(deliveries.map((delivery) => delivery.headers['webhook-id'])).size).toBe(1);
  expect(deliveries.every((delivery) => delivery.verifiedBy.length === 1)).toBe(true);
  await waitFor(async () => {
    const [row] = await queryRows<{ status: string }>(env.DATABASE_URL!, `select d.status from webhook_deliveries d join events e on e.id = d.event_id where e.payload like $1`, [`%${job.body.id}%`]);
    return row?.status === 'succeeded';
  }, 10_000, 'the delivery to be recorded');
}, 90_000);
