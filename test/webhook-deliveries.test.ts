/**
 * Delivery (events.md, "Delivery"): the retry schedule of WEBHOOK_DELIVERY_SCHEDULE_MS, `failed`
 * at its end, a manual retry with a fresh schedule, redirects not followed, the receiver's answer
 * read up to 4 KiB and kept to 1 KiB, the timeout, a slow endpoint not delaying another, and
 * endpoints disabled after failing for the disable window. Test pings carry the events here; the
 * lifecycle events themselves are test/events.test.ts's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from './support/database.ts';
import { registerUser, type TestUser } from './support/factories.ts';
import { startTestService, type TestService } from './support/service.ts';
import { waitFor } from './support/wait.ts';
import { WebhookReceiver } from './support/webhook-receiver.ts';

const SCHEDULE_MS = [0, 300, 600];
const TIMEOUT_MS = 1500;

let receiver: WebhookReceiver;
let pathCount = 0;
const freshPath = () => `/deliveries/${++pathCount}`;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
});
afterAll(async () => {
  await receiver?.close();
});

async function createEndpoint(service: TestService, user: TestUser, path = freshPath()) {
  const response = await service.api.post('/v1/webhook_endpoints', { token: user.token, body: { url: receiver.url(path), enabledEvents: ['*'] } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  receiver.trust(path, [response.body.secret]);
  return { id: response.body.id as string, path };
}

async function ping(service: TestService, user: TestUser, endpointId: string) {
  const response = await service.api.post(`/v1/webhook_endpoints/${endpointId}/test`, { token: user.token });
  expect(response.status).toBe(202);
  return response.body as { id: string; eventId: string };
}

async function deliveryOf(service: TestService, user: TestUser, endpointId: string, deliveryId: string) {
  const response = await service.api.get(`/v1/webhook_endpoints/${endpointId}/deliveries`, { token: user.token });
  return (response.body.data as any[]).find((delivery) => delivery.id === deliveryId);
}

function waitForDelivery(service: TestService, user: TestUser, endpointId: string, deliveryId: string, done: (delivery: any) => boolean, timeoutMs = 15_000) {
  return waitFor(async () => {
    const delivery = await deliveryOf(service, user, endpointId, deliveryId);
    return delivery && done(delivery) ? delivery : null;
  }, timeoutMs, `delivery ${deliveryId}`);
}

describe('delivery', () => {
  let service: TestService;
  let user: TestUser;

  beforeAll(async () => {
    service = await startTestService({ WEBHOOK_DELIVERY_SCHEDULE_MS: SCHEDULE_MS.join(','), WEBHOOK_DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS) });
    user = await registerUser(service.api);
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('failed attempts follow the schedule, all under one webhook-id, and the delivery ends failed', async () => {
    const endpoint = await createEndpoint(service, user);
    receiver.behave(endpoint.path, { status: 500, body: 'database is on fire' });
    const queued = await ping(service, user, endpoint.id);

    const failed = await waitForDelivery(service, user, endpoint.id, queued.id, (delivery) => delivery.status === 'failed');
    expect(failed).toMatchObject({
      status: 'failed',
      attempts: SCHEDULE_MS.length,
      lastResponseStatus: 500,
      lastError: 'answered 500 Internal Server Error',
      nextAttemptAt: null,
      lastAttemptAt: expect.any(String),
    });
    const attempts = receiver.at(endpoint.path);
    expect(attempts).toHaveLength(SCHEDULE_MS.length);
    expect(new Set(attempts.map((attempt) => attempt.headers['webhook-id']))).toEqual(new Set([queued.eventId]));
    expect(new Set(attempts.map((attempt) => attempt.body)).size).toBe(1);
    expect(attempts.every((attempt) => attempt.verifiedBy.length === 1)).toBe(true);
    // Each retry waited at least its delay (the queue may add up to a polling interval).
    const gaps = attempts.slice(1).map((attempt, i) => attempt.receivedAt - attempts[i]!.receivedAt);
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(SCHEDULE_MS[i + 1]! - 50));

    const [row] = await queryRows<{ last_response_excerpt: string }>(service.databaseUrl, 'select last_response_excerpt from webhook_deliveries where id = $1', [queued.id]);
    expect(row!.last_response_excerpt).toBe('database is on fire');
  });

  it('retries a failed delivery by hand with a fresh schedule and the same webhook-id; only failed ones', async () => {
    const endpoint = await createEndpoint(service, user);
    receiver.behave(endpoint.path, { status: 503 });
    const queued = await ping(service, user, endpoint.id);
    await waitForDelivery(service, user, endpoint.id, queued.id, (delivery) => delivery.status === 'failed');

    receiver.behave(endpoint.path, { status: 204 });
    const retried = await service.api.post(`/v1/webhook_endpoints/${endpoint.id}/deliveries/${queued.id}/retry`, { token: user.token });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id: queued.id, status: 'pending', attempts: SCHEDULE_MS.length, nextAttemptAt: expect.any(String) });
    const succeeded = await waitForDelivery(service, user, endpoint.id, queued.id, (delivery) => delivery.status === 'succeeded');
    expect(succeeded).toMatchObject({ attempts: SCHEDULE_MS.length + 1, lastResponseStatus: 204, lastError: null });
    const attempts = receiver.at(endpoint.path);
    expect(attempts).toHaveLength(SCHEDULE_MS.length + 1);
    expect(attempts.at(-1)!.headers['webhook-id']).toBe(queued.eventId);

    const again = await service.api.post(`/v1/webhook_endpoints/${endpoint.id}/deliveries/${queued.id}/retry`, { token: user.token });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'conflict', details: { reason: 'delivery_not_failed' } });
    const missing = await service.api.post(`/v1/webhook_endpoints/${endpoint.id}/deliveries/dlv_0000000000000000000000000000ffff/retry`, { token: user.token });
    expect(missing.status).toBe(404);
  });

  it('does not follow redirects: a 3xx is a failed attempt and the target never hears of it', async () => {
    const endpoint = await createEndpoint(service, user);
    const target = freshPath();
    receiver.behave(endpoint.path, { status: 307, headers: { location: receiver.url(target) } });
    const queued = await ping(service, user, endpoint.id);
    const failed = await waitForDelivery(service, user, endpoint.id, queued.id, (delivery) => delivery.status === 'failed');
    expect(failed).toMatchObject({ lastResponseStatus: 307, lastError: expect.stringContaining('redirects are not followed') });
    expect(receiver.at(target)).toEqual([]);
  });

  it('reads at most 4 KiB of an answer and keeps 1 KiB of it', async () => {
    const endpoint = await createEndpoint(service, user);
    receiver.behave(endpoint.path, { status: 200, bodyBytes: 16 * 1024 * 1024 });
    const queued = await ping(service, user, endpoint.id);
    await waitForDelivery(service, user, endpoint.id, queued.id, (delivery) => delivery.status === 'succeeded');
    const [row] = await queryRows<{ last_response_excerpt: string }>(service.databaseUrl, 'select last_response_excerpt from webhook_deliveries where id = $1', [queued.id]);
    expect(row!.last_response_excerpt).toBe('x'.repeat(1024));
    // The connection was dropped long before the 16 MiB were written.
    await waitFor(async () => receiver.at(endpoint.path)[0]?.answered !== undefined, 10_000, 'the answer to end');
    expect(receiver.at(endpoint.path)[0]!.answered).toBe(false);
  });

  it('an answer slower than the timeout is a failed attempt', async () => {
    const endpoint = await createEndpoint(service, user);
    receiver.behave(endpoint.path, { delayMs: TIMEOUT_MS + 1000 });
    const queued = await ping(service, user, endpoint.id);
    const failed = await waitForDelivery(service, user, endpoint.id, queued.id, (delivery) => delivery.status === 'failed', 20_000);
    expect(failed).toMatchObject({ lastResponseStatus: null, lastError: `timed out after ${TIMEOUT_MS} ms` });
    expect(failed.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
  }, 30_000);

  it('a slow endpoint does not delay another: it holds at most 4 delivery slots', async () => {
    const slow = await createEndpoint(service, user);
    const fast = await createEndpoint(service, user);
    receiver.behave(slow.path, { hang: true });
    // A burst of more than the slots one endpoint may hold (4), each held for the whole timeout:
    // the worker's slots fetch its messages all at once.
    await Promise.all(Array.from({ length: 12 }, () => ping(service, user, slow.id)));
    await waitFor(async () => receiver.at(slow.path).length >= 4, 10_000, 'the slow endpoint to hold its slots');

    const sent = Date.now();
    const queued = await ping(service, user, fast.id);
    await waitForDelivery(service, user, fast.id, queued.id, (delivery) => delivery.status === 'succeeded', 10_000);
    const [arrived] = receiver.at(fast.path);
    expect(arrived!.receivedAt - sent).toBeLessThan(TIMEOUT_MS);
    // The slow endpoint never had more than 4 attempts open at once.
    const slowAttempts = receiver.at(slow.path);
    const openAt = (at: number) => slowAttempts.filter((delivery) => delivery.receivedAt <= at && (delivery.closedAt === undefined || delivery.closedAt > at)).length;
    expect(Math.max(...slowAttempts.map((delivery) => openAt(delivery.receivedAt)))).toBe(4);
    receiver.releaseHanging();
  }, 30_000);
});

describe('disabling', () => {
  const DISABLE_AFTER_MS = 1500;
  let service: TestService;
  let user: TestUser;

  beforeAll(async () => {
    service = await startTestService({ WEBHOOK_DELIVERY_SCHEDULE_MS: '0,200,400,600,800,1000', WEBHOOK_DISABLE_AFTER_MS: String(DISABLE_AFTER_MS) });
    user = await registerUser(service.api);
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('an endpoint whose deliveries all failed for the disable window is disabled with a reason', async () => {
    const endpoint = await createEndpoint(service, user);
    receiver.behave(endpoint.path, { status: 502 });
    const first = await ping(service, user, endpoint.id);
    const second = await ping(service, user, endpoint.id);

    const disabled = await waitFor(async () => {
      const response = await service.api.get(`/v1/webhook_endpoints/${endpoint.id}`, { token: user.token });
      return response.body.status === 'disabled' && response.body;
    }, 15_000, 'the endpoint to be disabled');
    expect(disabled.disabledReason).toMatch(/^Every delivery failed for 1500 ms/);
    const attempts = receiver.at(endpoint.path);
    expect(attempts.at(-1)!.receivedAt - attempts[0]!.receivedAt).toBeGreaterThanOrEqual(DISABLE_AFTER_MS - 50);

    // What was still pending is not sent any more: failed, retriable once the endpoint is enabled again.
    const settled = await Promise.all([first, second].map((queued) => waitForDelivery(service, user, endpoint.id, queued.id, (delivery) => delivery.status === 'failed')));
    const receivedWhenSettled = receiver.at(endpoint.path).length;
    for (const delivery of settled) expect(delivery).toMatchObject({ lastError: 'not sent: the endpoint is disabled', nextAttemptAt: null });
    expect(settled.every((delivery) => delivery.attempts < 6)).toBe(true);
    const refused = await service.api.post(`/v1/webhook_endpoints/${endpoint.id}/deliveries/${first.id}/retry`, { token: user.token });
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.reason).toBe('endpoint_disabled');

    receiver.behave(endpoint.path, { status: 200 });
    const enabled = await service.api.patch(`/v1/webhook_endpoints/${endpoint.id}`, { token: user.token, body: { status: 'enabled' } });
    expect(enabled.body).toMatchObject({ status: 'enabled', disabledReason: null });
    const retried = await service.api.post(`/v1/webhook_endpoints/${endpoint.id}/deliveries/${first.id}/retry`, { token: user.token });
    expect(retried.status).toBe(200);
    await waitForDelivery(service, user, endpoint.id, first.id, (delivery) => delivery.status === 'succeeded');
    expect(receiver.at(endpoint.path).length).toBe(receivedWhenSettled + 1);
  });

  it('a success ends the run of failures, so intermittent failures never disable an endpoint', async () => {
    const endpoint = await createEndpoint(service, user);
    let calls = 0;
    // Every other attempt fails, for longer than the disable window.
    receiver.behave(endpoint.path, () => ({ status: ++calls % 2 === 0 ? 200 : 500 }));
    const started = Date.now();
    while (Date.now() - started < DISABLE_AFTER_MS + 1000) {
      const queued = await ping(service, user, endpoint.id);
      await waitForDelivery(service, user, endpoint.id, queued.id, (delivery) => delivery.status !== 'pending');
    }
    const response = await service.api.get(`/v1/webhook_endpoints/${endpoint.id}`, { token: user.token });
    expect(response.body).toMatchObject({ status: 'enabled', disabledReason: null });
    expect(calls).toBeGreaterThan(4);
  }, 30_000);
});
