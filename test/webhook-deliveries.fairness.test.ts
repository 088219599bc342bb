/**
 * Fair delivery across tenants (events.md: a slow or dead endpoint delays no other endpoint). A
 * tenant's endpoints that never answer hold at most DELIVERIES_PER_OWNER of the sending slots, and
 * endpoints whose deliveries are failing share at most half of a process's slots whoever owns them,
 * so another tenant's delivery is sent while every hostile attempt is still hanging. The checks are
 * orderings, not speeds: the hanging attempts are only released by the test (or a 60 s timeout).
 * POST …/test is limited per endpoint.
 */
import { expect } from 'vitest';
import { MAX_TEST_PINGS_PER_MINUTE } from '../contract/webhook-endpoints.ts';
import { DELIVERIES_PER_OWNER } from '../src/workers/delivery.worker.ts';
import { expectError } from './support/assertions.ts';
import { queryRows } from './support/database.ts';
import { registerUser, type TestUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import type { TestService } from './support/service.ts';
import { waitFor } from './support/wait.ts';
import type { ReceivedDelivery, WebhookReceiver } from './support/webhook-receiver.ts';

const CONCURRENCY = 16;
test.override('serviceEnv', { WEBHOOK_DELIVERY_TIMEOUT_MS: '60000', WEBHOOK_DELIVERY_CONCURRENCY: String(CONCURRENCY) });

let pathCount = 0;

interface Endpoint {
  id: string;
  path: string;
}

async function createEndpoint(service: TestService, receiver: WebhookReceiver, user: TestUser): Promise<Endpoint> {
  const path = `/fair/${++pathCount}`;
  const response = await service.api.post('/v1/webhook_endpoints', { token: user.token, body: { url: receiver.url(path), enabledEvents: ['*'] } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  receiver.trust(path, [response.body.secret]);
  return { id: response.body.id, path };
}

function ping(service: TestService, user: TestUser, endpoint: Endpoint) {
  return service.api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: user.token });
}

/** A tenant with `count` endpoints that never answer, each sent as many pings as the limit allows. */
async function hostileTenant(service: TestService, receiver: WebhookReceiver, count: number, { failing = false, failedDaysAgo = 0 } = {}) {
  const user = await registerUser(service.api);
  const endpoints = await Promise.all(Array.from({ length: count }, () => createEndpoint(service, receiver, user)));
  for (const endpoint of endpoints) receiver.behave(endpoint.path, { hang: true });
  if (failing) {
    // Their earlier deliveries failed (what the disable window counts from): the endpoints are failing.
    // `failedDaysAgo`: that run of failures ended so long ago (a quiet spell since).
    await queryRows(
      service.databaseUrl,
      `update webhook_endpoints set failing_since = now() - make_interval(days => $2), last_failed_at = now() - make_interval(days => $2) where id = any($1)`,
      [endpoints.map((endpoint) => endpoint.id), failedDaysAgo],
    );
  }
  for (const endpoint of endpoints) {
    const answers = await Promise.all(Array.from({ length: MAX_TEST_PINGS_PER_MINUTE }, () => ping(service, user, endpoint)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(MAX_TEST_PINGS_PER_MINUTE).fill(202));
  }
  const paths = new Set(endpoints.map((endpoint) => endpoint.path));
  return {
    user,
    endpoints,
    received: () => receiver.deliveries.filter((delivery) => paths.has(delivery.path)),
    /** Deletes the endpoints, so what they still had queued holds no slot of the next test. */
    leave: async () => {
      for (const endpoint of endpoints) {
        receiver.behave(endpoint.path, { status: 204 });
        expect((await service.api.delete(`/v1/webhook_endpoints/${endpoint.id}`, { token: user.token })).status).toBe(204);
      }
    },
  };
}

/** The most attempts that were open at the same moment. */
function mostOpenAtOnce(attempts: ReceivedDelivery[]): number {
  const openAt = (at: number) => attempts.filter((delivery) => delivery.receivedAt <= at && (delivery.closedAt === undefined || delivery.closedAt > at)).length;
  return Math.max(0, ...attempts.map((delivery) => openAt(delivery.receivedAt)));
}

/** Another tenant's ping to an endpoint that answers: returns when it arrived. */
async function politeDelivery(service: TestService, receiver: WebhookReceiver): Promise<ReceivedDelivery> {
  const user = await registerUser(service.api);
  const endpoint = await createEndpoint(service, receiver, user);
  expect((await ping(service, user, endpoint)).status).toBe(202);
  return waitFor(async () => receiver.at(endpoint.path)[0], 30_000, "the other tenant's ping");
}

test('a tenant whose endpoints never answer holds at most its share of slots; another tenant is served meanwhile', async ({ service, receiver }) => {
  const hostile = await hostileTenant(service, receiver, 8);
  await waitFor(async () => hostile.received().length >= DELIVERIES_PER_OWNER, 20_000, 'the hostile tenant to hold its slots');

  const arrived = await politeDelivery(service, receiver);

  // Sent while every hostile attempt was still hanging (they end only when released, below).
  expect(hostile.received().every((delivery) => delivery.closedAt === undefined)).toBe(true);
  expect(arrived.event?.type).toBe('ping');
  expect(mostOpenAtOnce(hostile.received())).toBe(DELIVERIES_PER_OWNER);

  // The test route's limit: the next ping to a flooded endpoint is refused.
  const refused = await ping(service, hostile.user, hostile.endpoints[0]!);
  expectError(refused, 429, 'rate_limited');
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  await hostile.leave();
  receiver.releaseHanging();
}, 60_000);

test('failing endpoints of several tenants share at most half the slots of a process', async ({ service, receiver }) => {
  const tenants = [await hostileTenant(service, receiver, 4, { failing: true }), await hostileTenant(service, receiver, 4, { failing: true })];
  const received = () => tenants.flatMap((tenant) => tenant.received());
  await waitFor(async () => received().length >= CONCURRENCY / 2, 20_000, 'the failing endpoints to hold their share');

  const arrived = await politeDelivery(service, receiver);

  expect(received().every((delivery) => delivery.closedAt === undefined)).toBe(true);
  expect(arrived.event?.type).toBe('ping');
  expect(mostOpenAtOnce(received())).toBe(CONCURRENCY / 2);
  for (const tenant of tenants) expect(mostOpenAtOnce(tenant.received())).toBeLessThanOrEqual(DELIVERIES_PER_OWNER);
  for (const tenant of tenants) await tenant.leave();
  receiver.releaseHanging();
}, 60_000);

test('endpoints whose last failure is older than a delivery span (a quiet spell) are not held to the failing share', async ({ service, receiver }) => {
  // Their deliveries failed 3 days ago, and none was sent since: that run of failures is over (as
  // for disabling, webhook-endpoints.quiet-spell), so each tenant gets its full DELIVERIES_PER_OWNER.
  const tenants = [
    await hostileTenant(service, receiver, 4, { failing: true, failedDaysAgo: 3 }),
    await hostileTenant(service, receiver, 4, { failing: true, failedDaysAgo: 3 }),
  ];
  const received = () => tenants.flatMap((tenant) => tenant.received());
  await waitFor(async () => received().length >= 2 * DELIVERIES_PER_OWNER, 20_000, 'the endpoints back from a quiet spell to hold their full share');

  expect(received().every((delivery) => delivery.closedAt === undefined)).toBe(true);
  expect(mostOpenAtOnce(received())).toBe(2 * DELIVERIES_PER_OWNER);
  expect(2 * DELIVERIES_PER_OWNER).toBeGreaterThan(CONCURRENCY / 2);
  for (const tenant of tenants) expect(mostOpenAtOnce(tenant.received())).toBe(DELIVERIES_PER_OWNER);
  for (const tenant of tenants) await tenant.leave();
  receiver.releaseHanging();
}, 60_000);
