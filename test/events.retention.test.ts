/**
 * Event retention: events older than EVENT_RETENTION_DAYS (at least the 30 days events.md promises)
 * are deleted with their deliveries, except one whose delivery is still pending; newer events stay.
 */
import pg from 'pg';
import { describe, expect } from 'vitest';
import { eventPayload, EventRepository } from '../src/events/repository.ts';
import { firstIdAt } from '../src/shared/ids.ts';
import { pruneEvents } from '../src/events/retention.ts';
import { queryRows } from './support/database.ts';
import { test as it } from './support/fixtures.ts';

const DAY_MS = 86_400_000;

describe('event retention', () => {
  it('deletes events older than the retention with their deliveries, keeping pending ones and newer events', async ({ api, service, user }) => {
    const [owner] = await queryRows<{ id: string }>(service.databaseUrl, 'select id from users where email = $1', [user.email]);
    const now = new Date();
    let serial = 0;
    /** An event of the user's created `daysAgo`, with one delivery in `deliveryStatus` (or none). */
    const eventAt = async (daysAgo: number, deliveryStatus: 'succeeded' | 'failed' | 'pending' | null) => {
      const createdAt = new Date(now.getTime() - daysAgo * DAY_MS);
      const suffix = (++serial).toString(16).padStart(20, '0');
      const id = `${firstIdAt('event', createdAt).slice(0, -20)}${suffix}`;
      const event = { ownerId: owner!.id, resellerStoreId: null, type: 'ping', object: { object: 'ping' } } as never;
      await queryRows(service.databaseUrl, 'insert into events (id, owner_id, reseller_store_id, type, payload, created_at) values ($1, $2, null, $3, $4, $5)', [
        id, owner!.id, 'ping', eventPayload(id, event, createdAt), createdAt,
      ]);
      if (deliveryStatus) {
        await queryRows(
          service.databaseUrl,
          `insert into webhook_deliveries (id, owner_id, endpoint_id, event_id, event_type, status, attempts, schedule_attempts, version, created_at, updated_at)
           values ($1, $2, 'we_retention', $3, 'ping', $4, 1, 1, 1, $5, $5)`,
          [`dlv_${id.slice(4)}`, owner!.id, id, deliveryStatus, createdAt],
        );
      }
      return id;
    };
    const expired = [await eventAt(45, 'succeeded'), await eventAt(31, 'failed'), await eventAt(40, null)];
    const stillSending = await eventAt(40, 'pending');
    const kept = [await eventAt(29, 'succeeded'), await eventAt(1, null)];

    const pruning = { events: new EventRepository(service.ctx.orm), retentionDays: service.ctx.config.eventRetentionDays };
    expect(await pruneEvents(pruning, now)).toBe(3);

    const left = await queryRows<{ id: string }>(service.databaseUrl, 'select id from events where owner_id = $1 order by id', [owner!.id]);
    expect(left.map((row) => row.id)).toEqual([stillSending, ...kept].sort());
    const deliveries = await queryRows<{ event_id: string }>(service.databaseUrl, 'select event_id from webhook_deliveries where owner_id = $1 order by event_id', [owner!.id]);
    expect(deliveries.map((row) => row.event_id)).toEqual([stillSending, kept[0]!].sort());
    for (const id of expired) expect((await api.get(`/v1/events/${id}`, { token: user.token })).status).toBe(404);
    // Nothing more to do: the next pass deletes nothing.
    expect(await pruneEvents(pruning, now)).toBe(0);
  });

  it('leaves an expired event whose failed delivery is being retried at that moment, with its delivery pending', async ({ service, user }) => {
    const [owner] = await queryRows<{ id: string }>(service.databaseUrl, 'select id from users where email = $1', [user.email]);
    const now = new Date();
    const createdAt = new Date(now.getTime() - 40 * DAY_MS);
    const id = `${firstIdAt('event', createdAt).slice(0, -20)}${'f'.repeat(20)}`;
    const event = { ownerId: owner!.id, resellerStoreId: null, type: 'ping', object: { object: 'ping' } } as never;
    await queryRows(service.databaseUrl, 'insert into events (id, owner_id, reseller_store_id, type, payload, created_at) values ($1, $2, null, $3, $4, $5)', [
      id, owner!.id, 'ping', eventPayload(id, event, createdAt), createdAt,
    ]);
    const delivery = `dlv_${id.slice(4)}`;
    await queryRows(
      service.databaseUrl,
      `insert into webhook_deliveries (id, owner_id, endpoint_id, event_id, event_type, status, attempts, schedule_attempts, version, created_at, updated_at)
       values ($1, $2, 'we_retention', $3, 'ping', 'failed', 8, 8, 1, $4, $4)`,
      [delivery, owner!.id, id, createdAt],
    );
    // A manual retry's transaction, as webhook-endpoints' changeDelivery writes it: its event held, the delivery pending, not committed yet.
    const retry = new pg.Client({ connectionString: service.databaseUrl });
    await retry.connect();
    try {
      await retry.query('begin');
      await retry.query('select id from events where id = $1 for share', [id]);
      await retry.query(`update webhook_deliveries set status = 'pending', schedule_attempts = 0, version = version + 1 where id = $1`, [delivery]);
      const pruned = pruneEvents({ events: new EventRepository(service.ctx.orm), retentionDays: 30 }, now);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await retry.query('commit');
      await pruned;
    } finally {
      await retry.end();
    }
    expect(await queryRows(service.databaseUrl, 'select id from events where id = $1', [id])).toHaveLength(1);
    expect(await queryRows(service.databaseUrl, 'select status from webhook_deliveries where id = $1', [delivery])).toEqual([{ status: 'pending' }]);
  });
});
