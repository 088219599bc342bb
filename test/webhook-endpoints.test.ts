/**
 * The webhook_endpoints resource (events.md, "Webhook endpoints"): create with a `whsec_` secret
 * shown once, list, get, patch, delete, rotate_secret, test ping, deliveries, the per-user limit,
 * ownership and URL validation. Deliveries go to a real receiver that verifies them with the stock
 * `standardwebhooks` package.
 */
import pg from 'pg';
import { describe, expect } from 'vitest';
import { connectOrm } from '../src/database.ts';
import { sqlOf } from '../src/db/sql.ts';
import { strandedDeliveries, takeSendingSlot } from '../src/webhook-endpoints/repository.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { sendWebhook } from './sandbox/server.ts';
import { ORDERS_PATH, uniqueSuffix } from './support/webhooks.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';

test.override('serviceEnv', { WEBHOOK_DELIVERY_SCHEDULE_MS: '0,200,400', SWEEP_INTERVAL_MS: '500' });

let alice: TestUser;
let bob: TestUser;
let pathCount = 0;

const freshPath = () => `/hooks/${++pathCount}`;

const it = test
  .extend('createEndpoint', { scope: 'file' }, ({ api, receiver }) => async (user: TestUser, body: Record<string, unknown> = {}) => {
    const path = freshPath();
    const response = await api.post('/v1/webhook_endpoints', { token: user.token, body: { url: receiver.url(path), enabledEvents: ['*'], ...body } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    receiver.trust(path, [response.body.secret]);
    return { ...response.body, path } as { id: string; secret: string; path: string; url: string; [key: string]: unknown };
  })
  .extend('deliveriesOf', { scope: 'file' }, ({ api }) => async (user: TestUser, endpointId: string, query = '') => {
    const response = await api.get(`/v1/webhook_endpoints/${endpointId}/deliveries${query}`, { token: user.token });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data as any[];
  });

it.beforeAll(async ({ api }) => {
  alice = await registerUser(api);
  bob = await registerUser(api);
});

describe('webhook endpoints', () => {
  it('creates an endpoint with a whsec_ secret shown only in that answer', async ({ service, api, createEndpoint }) => {
    const created = await createEndpoint(alice, { enabledEvents: ['sync_job.completed', 'sync_job.dead'], description: 'ERP' });
    expect(created).toMatchObject({
      id: expect.stringMatching(/^we_[0-9a-f]{32}$/),
      object: 'webhook_endpoint',
      enabledEvents: ['sync_job.completed', 'sync_job.dead'],
      description: 'ERP',
      status: 'enabled',
      disabledReason: null,
      request_id: expect.any(String),
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(Buffer.from(created.secret.slice('whsec_'.length), 'base64')).toHaveLength(24);

    const answers = [
      await api.get(`/v1/webhook_endpoints/${created.id}`, { token: alice.token }),
      await api.get('/v1/webhook_endpoints', { token: alice.token }),
      await api.patch(`/v1/webhook_endpoints/${created.id}`, { token: alice.token, body: { description: 'ERP sync' } }),
      await api.get(`/v1/webhook_endpoints/${created.id}/deliveries`, { token: alice.token }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(JSON.stringify(answer.body)).not.toContain(created.secret);
      expect(JSON.stringify(answer.body)).not.toContain('secret');
    }
    expect(answers[1]!.body.data.map((endpoint: { id: string }) => endpoint.id)).toContain(created.id);
    expect(answers[2]!.body.description).toBe('ERP sync');

    // Sealed at rest, not stored as given.
    const [row] = await queryRows<{ secret_encrypted: string }>(service.databaseUrl, 'select secret_encrypted from webhook_endpoints where id = $1', [created.id]);
    expect(row!.secret_encrypted).toMatch(/^v1\./);
    expect(row!.secret_encrypted).not.toContain(created.secret.slice('whsec_'.length));
  });

  it('validates the body: URL, event types, unknown fields', async ({ api }) => {
    const cases = [
      { url: 'not a url', enabledEvents: ['*'] },
      { url: 'ftp://example.com/hook', enabledEvents: ['*'] },
      { url: 'https://user:pass@example.com/hook', enabledEvents: ['*'] },
      { url: 'https://example.com/hook', enabledEvents: [] },
      { url: 'https://example.com/hook', enabledEvents: ['sync_job.exploded'] },
      { url: 'https://example.com/hook', enabledEvents: ['*', 'sync_job.created'] },
      { url: 'https://example.com/hook', enabledEvents: ['ping'] },
      { url: 'https://example.com/hook', enabledEvents: ['*'], secret: 'whsec_mine' },
    ];
    for (const body of cases) {
      const response = await api.post('/v1/webhook_endpoints', { token: alice.token, body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.code).toBe('validation_failed');
    }
  });

  it('sends a signed ping on test, which the stock standardwebhooks receiver verifies', async ({ api, receiver, createEndpoint, deliveriesOf }) => {
    const endpoint = await createEndpoint(alice, { enabledEvents: ['sync_job.completed'] });
    const queued = await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    expect(queued.status).toBe(202);
    expect(queued.body).toMatchObject({ id: expect.stringMatching(/^dlv_[0-9a-f]{32}$/), eventType: 'ping', status: 'pending', attempts: 0 });

    const [delivery] = await waitFor(async () => receiver.at(endpoint.path).length === 1 && receiver.at(endpoint.path), 10_000, 'the ping');
    expect(delivery!.verifiedBy).toEqual([0]);
    expect(delivery!.event).toMatchObject({ id: queued.body.eventId, object: 'event', type: 'ping', resellerStoreId: null, data: { object: { webhookEndpointId: endpoint.id } } });
    expect(delivery!.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': queued.body.eventId,
      'user-agent': expect.stringMatching(/order-routing/),
    });
    expect(Math.abs(Number(delivery!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);

    const [row] = await waitFor(async () => {
      const rows = await deliveriesOf(alice, endpoint.id);
      return rows[0]?.status === 'succeeded' && rows;
    }, 10_000, 'the delivery to succeed');
    expect(row).toMatchObject({ id: queued.body.id, status: 'succeeded', attempts: 1, lastResponseStatus: 200, lastError: null, nextAttemptAt: null });
    expect(row.durationMs).toEqual(expect.any(Number));

    const event = await api.get(`/v1/events/${queued.body.eventId}`, { token: alice.token });
    expect(event.status).toBe(200);
    expect(JSON.parse(delivery!.body)).toEqual(Object.fromEntries(Object.entries(event.body).filter(([key]) => key !== 'request_id')));
  });

  it('rotates the secret: for 24 h both the new and the old secret verify every delivery', async ({ service, api, receiver, createEndpoint }) => {
    const endpoint = await createEndpoint(alice);
    const rotated = await api.post(`/v1/webhook_endpoints/${endpoint.id}/rotate_secret`, { token: alice.token });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    receiver.trust(endpoint.path, [rotated.body.secret, endpoint.secret]);

    await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    const [delivery] = await waitFor(async () => receiver.at(endpoint.path).length === 1 && receiver.at(endpoint.path), 10_000, 'the ping');
    expect(delivery!.verifiedBy).toEqual([0, 1]);
    expect(String(delivery!.headers['webhook-signature']).split(' ')).toHaveLength(2);

    // Once the overlap is over, only the new secret signs.
    await queryRows(service.databaseUrl, `update webhook_endpoints set previous_secret_expires_at = now() - interval '1 second' where id = $1`, [endpoint.id]);
    await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    const [, later] = await waitFor(async () => receiver.at(endpoint.path).length === 2 && receiver.at(endpoint.path), 10_000, 'the second ping');
    expect(later!.verifiedBy).toEqual([0]);
    expect(String(later!.headers['webhook-signature']).split(' ')).toHaveLength(1);

    // Neither secret, nor a signature made with one, is in any log line of the service.
    const logs = service.logs.join('\n');
    expect(service.logs.some((line) => line.includes(endpoint.id))).toBe(true);
    for (const secret of [endpoint.secret, rotated.body.secret]) {
      expect(logs).not.toContain(secret);
      expect(logs).not.toContain(secret.slice('whsec_'.length));
    }
    expect(logs).not.toContain(String(later!.headers['webhook-signature']));
  });

  it('applies concurrent changes one after the other: each rotation keeps the secret the one before it made', async ({ service, api, receiver, createEndpoint }) => {
    const endpoint = await createEndpoint(alice);
    // The endpoint's row is held while two rotations and a PATCH arrive, so all three meet it at once.
    const holder = new pg.Client({ connectionString: service.databaseUrl });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select id from webhook_endpoints where id = $1 for update', [endpoint.id]);
      const answers = Promise.all([
        api.post(`/v1/webhook_endpoints/${endpoint.id}/rotate_secret`, { token: alice.token }),
        api.post(`/v1/webhook_endpoints/${endpoint.id}/rotate_secret`, { token: alice.token }),
        api.patch(`/v1/webhook_endpoints/${endpoint.id}`, { token: alice.token, body: { description: 'changed meanwhile' } }),
      ]);
      await waitFor(async () => {
        const [row] = await queryRows<{ waiting: number }>(
          service.databaseUrl,
          `select count(*)::int as waiting from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database() and query ilike '%webhook_endpoints%'`,
        );
        return row!.waiting >= 3;
      }, 10_000, 'the three changes waiting for the row');
      await holder.query('commit');
      const [first, second, patched] = await answers;
      expect([first!.status, second!.status, patched!.status]).toEqual([200, 200, 200]);
      // The newest two secrets sign; the one both rotations found no longer does.
      receiver.trust(endpoint.path, [endpoint.secret, first!.body.secret, second!.body.secret]);
      await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
      const [delivery] = await waitFor(async () => receiver.at(endpoint.path).length === 1 && receiver.at(endpoint.path), 10_000, 'the ping');
      expect(delivery!.verifiedBy).toEqual([1, 2]);
      expect((await api.get(`/v1/webhook_endpoints/${endpoint.id}`, { token: alice.token })).body.description).toBe('changed meanwhile');
    } finally {
      await holder.end();
    }
  });

  it('sends a delivery again whose queue message is gone, instead of leaving it pending for good', async ({ service, api, receiver, createEndpoint, deliveriesOf }) => {
    const endpoint = await createEndpoint(alice);
    await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    const [first] = await waitFor(async () => receiver.at(endpoint.path).length === 1 && receiver.at(endpoint.path), 10_000, 'the ping');
    // Still pending, its message gone, untouched for an hour.
    await queryRows(
      service.databaseUrl,
      `update webhook_deliveries set status = 'pending', queue_message_id = gen_random_uuid()::text, updated_at = now() - interval '1 hour' where endpoint_id = $1`,
      [endpoint.id],
    );
    const [again] = await waitFor(async () => receiver.at(endpoint.path).length === 2 && receiver.at(endpoint.path).slice(1), 10_000, 'the delivery sent again by the sweep');
    expect(again!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    await waitFor(async () => (await deliveriesOf(alice, endpoint.id))[0]?.status === 'succeeded', 10_000, 'the delivery succeeded');
  });

  it('leaves a pending delivery waiting for a later attempt to that attempt, and sends it again once it is due with its message gone', async ({ service, api, receiver, createEndpoint }) => {
    const endpoint = await createEndpoint(alice);
    await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    await waitFor(async () => receiver.at(endpoint.path).length === 1, 10_000, 'the ping');
    // Its last attempt an hour ago, its message gone, its next attempt due `nextAttempt` from now.
    const setDue = (nextAttempt: string) =>
      queryRows<{ id: string }>(
        service.databaseUrl,
        `update webhook_deliveries set status = 'pending', queue_message_id = gen_random_uuid()::text,
           updated_at = now() - interval '1 hour', next_attempt_at = now() + interval '${nextAttempt}' where endpoint_id = $1 returning id`,
        [endpoint.id],
      );
    const [delivery] = await setDue('1 hour');
    const orm = await connectOrm(service.databaseUrl, 1);
    try {
      const stranded = await sqlOf(orm).transaction().execute((trx) => strandedDeliveries(trx, 'webhook.deliver', new Date(Date.now() - 60_000), 100));
      expect(stranded.map((row) => row.id)).not.toContain(delivery!.id);
    } finally {
      await orm.close();
    }
    // Three passes of the sweep (every 500 ms here) leave it to its attempt.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(receiver.at(endpoint.path)).toHaveLength(1);
    await setDue('-2 minutes');
    await waitFor(async () => receiver.at(endpoint.path).length === 2, 10_000, 'the delivery sent again by the sweep once due');
  });

  it('ends failed (retry by hand) a delivery whose queue message pg-boss gave up on, instead of leaving it pending for good', async ({ service, api, receiver, createEndpoint, deliveriesOf }) => {
    const endpoint = await createEndpoint(alice);
    await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    await waitFor(async () => receiver.at(endpoint.path).length === 1, 10_000, 'the ping');
    // As a long outage leaves it: its handler never recorded an outcome, pg-boss gave its message up.
    const message = `'${crypto.randomUUID()}'`;
    await queryRows(
      service.databaseUrl,
      `with d as (update webhook_deliveries set status = 'pending', queue_message_id = ${message}, updated_at = now() - interval '1 hour' where endpoint_id = $1 returning id)
       insert into pgboss.job (id, name, data, state) select ${message}::uuid, 'webhook.deliver', jsonb_build_object('deliveryId', d.id), 'failed' from d`,
      [endpoint.id],
    );
    const [failed] = await waitFor(async () => {
      const deliveries = await deliveriesOf(alice, endpoint.id);
      return deliveries[0]?.status === 'failed' && deliveries;
    }, 10_000, 'the delivery ended failed');
    expect(failed.lastError).toContain('given up');
    expect(receiver.at(endpoint.path)).toHaveLength(1);
    const retried = await api.post(`/v1/webhook_endpoints/${endpoint.id}/deliveries/${failed.id}/retry`, { token: alice.token });
    expect(retried.status).toBe(200);
    await waitFor(async () => receiver.at(endpoint.path).length === 2, 10_000, 'the delivery retried by hand');
  });

  it('gives no sending slot for an endpoint disabled after its delivery was read: nothing more is sent to it', async ({ service, api, receiver, createEndpoint }) => {
    const endpoint = await createEndpoint(alice);
    await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    await waitFor(async () => receiver.at(endpoint.path).length === 1, 10_000, 'the ping');
    expect((await api.patch(`/v1/webhook_endpoints/${endpoint.id}`, { token: alice.token, body: { status: 'disabled' } })).status).toBe(200);
    const [delivery] = await queryRows<{ id: string; version: number; owner_id: string }>(service.databaseUrl, 'select d.id, d.version, e.owner_id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id where d.endpoint_id = $1', [endpoint.id]);
    const orm = await connectOrm(service.databaseUrl, 1);
    try {
      const now = new Date();
      const taken = await sqlOf(orm)
        .transaction()
        .execute((trx) =>
          takeSendingSlot(trx, { ownerId: delivery!.owner_id, endpointId: endpoint.id, deliveryId: delivery!.id, version: delivery!.version, limit: 4, ownerLimit: 16, now, leaseUntil: new Date(now.getTime() + 60_000) }),
        );
      expect(taken).toBe(false);
    } finally {
      await orm.close();
    }
  });

  it('deletes an endpoint: 204, then 404, and its pending deliveries stop', async ({ service, api, receiver, createEndpoint }) => {
    const endpoint = await createEndpoint(alice);
    receiver.behave(endpoint.path, { status: 503 });
    await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    await waitFor(async () => receiver.at(endpoint.path).length >= 1, 10_000, 'the first attempt');
    const removed = await api.delete(`/v1/webhook_endpoints/${endpoint.id}`, { token: alice.token });
    expect(removed.status).toBe(204);
    expect((await api.get(`/v1/webhook_endpoints/${endpoint.id}`, { token: alice.token })).status).toBe(404);
    const attemptsAtDeletion = receiver.at(endpoint.path).length;
    // The schedule (0, 200, 400 ms) would have made every attempt well within this.
    await waitFor(async () => (await queryRows(service.databaseUrl, `select 1 from pgboss.job where name = 'webhook.deliver' and state in ('created', 'retry', 'active') and group_id = $1`, [endpoint.id])).length === 0, 10_000, 'the queued attempt to be taken');
    expect(receiver.at(endpoint.path).length).toBeLessThanOrEqual(attemptsAtDeletion + 1);
    expect(await queryRows(service.databaseUrl, 'select id from webhook_deliveries where endpoint_id = $1', [endpoint.id])).toEqual([]);
  });

  it('removes a delivery to an endpoint deleted while the routing that fanned out to it was still committing', async ({ service, api, sandbox, receiver }) => {
    const user = await registerUser(api);
    const resellerSecret = `whsec_reseller_${uniqueSuffix()}`;
    const reseller = await createResellerStore(api, user.token, { platform: 'platform_a', webhookSecret: resellerSecret });
    const supplier = await createSourceStore(api, user.token, reseller.id, { platform: 'custom', vendorTag: `Acme ${uniqueSuffix()}`, webhookSecret: `whsec_supplier_${uniqueSuffix()}` });
    const created = await api.post('/v1/webhook_endpoints', { token: user.token, body: { url: receiver.url(freshPath()), enabledEvents: ['*'] } });
    expect(created.status).toBe(201);
    const endpointId = created.body.id as string;
    const orderId = 970_000 + Math.floor(Math.random() * 10_000);
    const payload = sandbox.buildOrderPayload('platform_a', { id: orderId, lines: [{ sku: 'A-1', title: 'Anvil', vendor: supplier.vendorTag, quantity: 1, price: '25.00' }] });
    // The order's cancellation lock, which the routing takes right after appending its events to the
    // outbox (src/orders/routing.ts): held, the routing is past its fan-out and not yet committed.
    const client = new pg.Client({ connectionString: service.databaseUrl });
    await client.connect();
    try {
      await client.query('begin');
      await client.query('select pg_advisory_xact_lock(hashtext($1))', [`cancel:${reseller.id}:${orderId}`]);
      const routed = sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: reseller.shopDomain, secret: resellerSecret, topic: 'orders/create', payload });
      await waitFor(async () => {
        const [row] = await queryRows<{ waiting: string }>(service.databaseUrl, "select count(*) as waiting from pg_stat_activity where wait_event_type = 'Lock' and wait_event = 'advisory'");
        return Number(row!.waiting) > 0;
      }, 10_000, 'the routing to reach the cancellation lock');
      expect((await api.delete(`/v1/webhook_endpoints/${endpointId}`, { token: user.token })).status).toBe(204);
      await client.query('commit');
      expect((await routed).status).toBe(200);
    } finally {
      await client.end();
    }
    const left = () => queryRows(service.databaseUrl, 'select id from webhook_deliveries where endpoint_id = $1', [endpointId]);
    await waitFor(async () => (await left()).length === 0, 10_000, 'the delivery to the deleted endpoint to be removed');
  });

  it('lets a manual retry wait for events pruning that holds its event, then answers 404: the two lock in one order', async ({ service, api, receiver, createEndpoint }) => {
    const endpoint = await createEndpoint(alice);
    receiver.behave(endpoint.path, { status: 500 });
    const ping = await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    const deliveryId = ping.body.id as string;
    await waitFor(async () => (await queryRows<{ status: string }>(service.databaseUrl, 'select status from webhook_deliveries where id = $1', [deliveryId]))[0]?.status === 'failed', 15_000, 'the delivery to fail');
    const eventId = (await queryRows<{ event_id: string }>(service.databaseUrl, 'select event_id from webhook_deliveries where id = $1', [deliveryId]))[0]!.event_id;
    // As pruning does: the old event locked first, then its deliveries deleted, then the event.
    const pruning = new pg.Client({ connectionString: service.databaseUrl });
    await pruning.connect();
    try {
      await pruning.query('begin');
      await pruning.query('select id from events where id = $1 for update', [eventId]);
      const retried = api.post(`/v1/webhook_endpoints/${endpoint.id}/deliveries/${deliveryId}/retry`, { token: alice.token });
      await waitFor(async () => {
        const [row] = await queryRows<{ waiting: string }>(service.databaseUrl, "select count(*) as waiting from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%from \"events\"%for share%'");
        return Number(row!.waiting) > 0;
      }, 10_000, 'the retry to wait for the event');
      await pruning.query('delete from webhook_deliveries where event_id = $1', [eventId]);
      await pruning.query('delete from events where id = $1', [eventId]);
      await pruning.query('commit');
      expect((await retried).status).toBe(404);
    } finally {
      await pruning.end();
    }
  });

  it('answers concurrent retries of one failed delivery with one 200 and 409 delivery_not_failed, never a 500', async ({ service, api, receiver, createEndpoint }) => {
    const endpoint = await createEndpoint(alice);
    receiver.behave(endpoint.path, { status: 500 });
    const ping = await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    expect(ping.status).toBe(202);
    const deliveryId = ping.body.id as string;
    const statusOf = async () => (await queryRows<{ status: string }>(service.databaseUrl, 'select status from webhook_deliveries where id = $1', [deliveryId]))[0]!.status;
    const statuses: number[] = [];
    for (let round = 0; round < 3; round++) {
      await waitFor(async () => (await statusOf()) === 'failed', 15_000, 'the delivery to fail');
      const answers = await Promise.all(Array.from({ length: 6 }, () => api.post(`/v1/webhook_endpoints/${endpoint.id}/deliveries/${deliveryId}/retry`, { token: alice.token })));
      statuses.push(...answers.map((answer) => answer.status));
      for (const answer of answers.filter((a) => a.status === 409)) expect(answer.body.error).toMatchObject({ code: 'conflict', details: { reason: 'delivery_not_failed' } });
    }
    expect(statuses.filter((status) => status === 200)).toHaveLength(3);
    expect(statuses.filter((status) => status !== 200 && status !== 409)).toEqual([]);
  });

  it('answers 404 to a test ping whose endpoint is deleted while the ping is being queued', async ({ service, api, createEndpoint }) => {
    const endpoint = await createEndpoint(alice);
    // The endpoint's row held, as a DELETE in progress holds it (deleteWithDeliveries).
    const client = new pg.Client({ connectionString: service.databaseUrl });
    await client.connect();
    try {
      await client.query('begin');
      await client.query('select id from webhook_endpoints where id = $1 for update', [endpoint.id]);
      const tested = api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
      await waitFor(async () => {
        const [row] = await queryRows<{ waiting: string }>(service.databaseUrl, "select count(*) as waiting from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%webhook_endpoints%for update%'");
        return Number(row!.waiting) > 0;
      }, 10_000, 'the ping to wait for the endpoint row');
      await client.query('delete from webhook_deliveries where endpoint_id = $1', [endpoint.id]);
      await client.query('delete from webhook_endpoints where id = $1', [endpoint.id]);
      await client.query('commit');
      const answer = await tested;
      expect(answer.status, JSON.stringify(answer.body)).toBe(404);
    } finally {
      await client.end();
    }
  });

  it('another user\'s endpoint, and its deliveries, are 404 on every route', async ({ api, createEndpoint, deliveriesOf }) => {
    const endpoint = await createEndpoint(alice);
    await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    const [delivery] = await waitFor(async () => {
      const succeeded = (await deliveriesOf(alice, endpoint.id)).filter((d) => d.status === 'succeeded');
      return succeeded.length > 0 && succeeded;
    }, 10_000, 'the ping');
    const calls = [
      () => api.get(`/v1/webhook_endpoints/${endpoint.id}`, { token: bob.token }),
      () => api.patch(`/v1/webhook_endpoints/${endpoint.id}`, { token: bob.token, body: { status: 'disabled' } }),
      () => api.delete(`/v1/webhook_endpoints/${endpoint.id}`, { token: bob.token }),
      () => api.post(`/v1/webhook_endpoints/${endpoint.id}/rotate_secret`, { token: bob.token }),
      () => api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: bob.token }),
      () => api.get(`/v1/webhook_endpoints/${endpoint.id}/deliveries`, { token: bob.token }),
      () => api.post(`/v1/webhook_endpoints/${endpoint.id}/deliveries/${delivery!.id}/retry`, { token: bob.token }),
      () => api.get(`/v1/events/${delivery!.eventId}`, { token: bob.token }),
    ];
    for (const call of calls) {
      const response = await call();
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('not_found');
    }
    expect((await api.get('/v1/webhook_endpoints', { token: bob.token })).body.data.map((e: { id: string }) => e.id)).not.toContain(endpoint.id);
    expect((await api.get('/v1/events?type=ping', { token: bob.token })).body.data).toEqual([]);
    const mine = await api.get(`/v1/webhook_endpoints/${endpoint.id}`, { token: alice.token });
    expect(mine.body).toMatchObject({ status: 'enabled' });
  });

  it('allows at most 16 endpoints per user', async ({ api, receiver }) => {
    const user = await registerUser(api);
    const created = await Promise.all(Array.from({ length: 17 }, () =>
      api.post('/v1/webhook_endpoints', { token: user.token, body: { url: receiver.url(freshPath()), enabledEvents: ['*'] } }),
    ));
    expect(created.filter((response) => response.status === 201)).toHaveLength(16);
    const refused = created.find((response) => response.status === 409)!;
    expect(refused.body.error).toMatchObject({ code: 'conflict', details: { reason: 'too_many_webhook_endpoints' } });
    const [first] = created.filter((response) => response.status === 201);
    expect((await api.delete(`/v1/webhook_endpoints/${first!.body.id}`, { token: user.token })).status).toBe(204);
    expect((await api.post('/v1/webhook_endpoints', { token: user.token, body: { url: receiver.url(freshPath()), enabledEvents: ['*'] } })).status).toBe(201);
  });

  it('a disabled endpoint cannot be tested; enabling it clears disabledReason', async ({ service, api, receiver, createEndpoint }) => {
    const endpoint = await createEndpoint(alice);
    const disabled = await api.patch(`/v1/webhook_endpoints/${endpoint.id}`, { token: alice.token, body: { status: 'disabled' } });
    expect(disabled.body).toMatchObject({ status: 'disabled', disabledReason: null });
    const refused = await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token });
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.reason).toBe('endpoint_disabled');
    await queryRows(service.databaseUrl, `update webhook_endpoints set disabled_reason = 'Every delivery failed', failing_since = now() where id = $1`, [endpoint.id]);
    const enabled = await api.patch(`/v1/webhook_endpoints/${endpoint.id}`, { token: alice.token, body: { status: 'enabled' } });
    expect(enabled.body).toMatchObject({ status: 'enabled', disabledReason: null });
    const [row] = await queryRows<{ failing_since: Date | null }>(service.databaseUrl, 'select failing_since from webhook_endpoints where id = $1', [endpoint.id]);
    expect(row!.failing_since).toBeNull();
    expect((await api.post(`/v1/webhook_endpoints/${endpoint.id}/test`, { token: alice.token })).status).toBe(202);
    await waitFor(async () => receiver.at(endpoint.path).length === 1, 10_000, 'the ping');
  });
});
