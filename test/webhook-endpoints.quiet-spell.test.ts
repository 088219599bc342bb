/**
 * Disabling after a quiet spell (events.md, "Delivery": an endpoint whose deliveries have ALL been
 * failing for 5 days is disabled). An endpoint whose deliveries failed on day 0, which then got no
 * event for days, has not been failing all that time: a failure on day 6 starts a new run of
 * failures instead of disabling it. A run goes on while failures follow each other within the
 * delivery schedule's span (a delivery still being retried); after a longer gap it starts anew.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows } from './support/database.ts';
import { registerUser, type TestUser } from './support/factories.ts';
import { startTestService, type TestService } from './support/service.ts';
import { waitFor } from './support/wait.ts';
import { WebhookReceiver } from './support/webhook-receiver.ts';

const DAY_MS = 86_400_000;

let receiver: WebhookReceiver;
let service: TestService;
let user: TestUser;
let pathCount = 0;

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  // The default disable window (5 days) and timeout; a short schedule so a ping's delivery ends soon.
  service = await startTestService({ WEBHOOK_DELIVERY_SCHEDULE_MS: '0,100,200' });
  user = await registerUser(service.api);
});
afterAll(async () => {
  await service?.stop();
  await receiver?.close();
});

async function failingEndpoint() {
  const path = `/quiet/${++pathCount}`;
  const response = await service.api.post('/v1/webhook_endpoints', { token: user.token, body: { url: receiver.url(path), enabledEvents: ['*'] } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  receiver.trust(path, [response.body.secret]);
  receiver.behave(path, { status: 503 });
  return { id: response.body.id as string, path };
}

/** Sends a ping to the endpoint and waits until its delivery has failed for good. */
async function pingFails(endpointId: string) {
  const queued = await service.api.post(`/v1/webhook_endpoints/${endpointId}/test`, { token: user.token });
  expect(queued.status).toBe(202);
  return waitFor(async () => {
    const response = await service.api.get(`/v1/webhook_endpoints/${endpointId}/deliveries`, { token: user.token });
    const delivery = (response.body.data as any[]).find((candidate) => candidate.id === queued.body.id);
    return delivery?.status === 'failed' ? delivery : null;
  }, 15_000, 'the ping delivery to fail');
}

async function endpointRow(id: string) {
  const [row] = await queryRows<{ status: string; failing_since: Date | null; last_failed_at: Date | null }>(
    service.databaseUrl,
    'select status, failing_since, last_failed_at from webhook_endpoints where id = $1',
    [id],
  );
  return row!;
}

describe('disabling after a quiet spell', () => {
  it('a failure days after the last one starts a new run of failures: the endpoint stays enabled', async () => {
    const endpoint = await failingEndpoint();
    // Day 0: every delivery failed (the last attempt about a day later, as the schedule ends); then no event for 5 days.
    await queryRows(
      service.databaseUrl,
      `update webhook_endpoints set failing_since = now() - interval '6 days', last_failed_at = now() - interval '5 days' where id = $1`,
      [endpoint.id],
    );
    const startedAt = Date.now();
    const delivery = await pingFails(endpoint.id);
    expect(delivery.attempts).toBe(3);
    expect(receiver.at(endpoint.path)).toHaveLength(3);

    const response = await service.api.get(`/v1/webhook_endpoints/${endpoint.id}`, { token: user.token });
    expect(response.body).toMatchObject({ status: 'enabled', disabledReason: null });
    const row = await endpointRow(endpoint.id);
    // The run of failures began with today's first attempt, not on day 0.
    expect(row.failing_since!.getTime()).toBeGreaterThanOrEqual(startedAt - 1000);
    expect(row.last_failed_at!.getTime()).toBeGreaterThanOrEqual(row.failing_since!.getTime());
  });

  it('failures that follow each other within the schedule still disable the endpoint after 5 days', async () => {
    const endpoint = await failingEndpoint();
    // Failing for 6 days with no gap: the last failure 5 s ago, within this service's delivery span
    // (delays 0+100+200 ms and three attempts of up to 10 s: about 30 s; with the defaults about 27.6 h).
    await queryRows(
      service.databaseUrl,
      `update webhook_endpoints set failing_since = now() - interval '6 days', last_failed_at = now() - interval '5 seconds' where id = $1`,
      [endpoint.id],
    );
    await pingFails(endpoint.id);
    const response = await service.api.get(`/v1/webhook_endpoints/${endpoint.id}`, { token: user.token });
    expect(response.body.status).toBe('disabled');
    expect(response.body.disabledReason).toMatch(/^Every delivery failed for 5 days/);
    const row = await endpointRow(endpoint.id);
    expect(Date.now() - row.failing_since!.getTime()).toBeGreaterThan(6 * DAY_MS - 60_000);
  });
});
