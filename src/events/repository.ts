import { sql } from 'kysely';
import type { Trx } from '../db/sql.ts';
import { newId } from '../shared/ids.ts';
import type { NewEvent } from './types.ts';

/** A delivery the fan-out created, with the queue message id its row expects. */
export interface QueuedDelivery {
  id: string;
  endpointId: string;
  queueMessageId: string;
}

/**
 * A time-sortable `dlv_` id made by the database: the millisecond clock in hex, as the first 48 bits
 * of a UUIDv7 are (so ids sort by creation and serve as paging cursors like every other id), then
 * random hex. Made in SQL because the fan-out learns how many deliveries there are only as it
 * inserts them; PostgreSQL 13 has no uuidv7().
 */
const DELIVERY_ID = sql`'dlv_' || lpad(to_hex(floor(extract(epoch from clock_timestamp()) * 1000)::bigint), 12, '0') || substr(replace(gen_random_uuid()::text, '-', ''), 13)`;

/** The event as it is delivered and listed; its bytes are signed the same way on every attempt. */
export function eventPayload(id: string, event: NewEvent, createdAt: Date): string {
  return JSON.stringify({
    id,
    object: 'event',
    type: event.type,
    createdAt: createdAt.toISOString(),
    resellerStoreId: event.resellerStoreId,
    data: { object: event.object },
  });
}

/**
 * One statement: the events, and one pending delivery per event and enabled endpoint of its owner
 * subscribed to its type (or, with `onlyEndpointId`, to that endpoint alone: a test send). Returns
 * the deliveries, whose queue messages the caller inserts in the same transaction.
 */
export async function insertEventsWithDeliveries(trx: Trx, events: NewEvent[], onlyEndpointId: string | null = null): Promise<QueuedDelivery[]> {
  const now = new Date();
  const rows = events.map((event) => {
    const id = newId('event');
    return { id, owner_id: event.ownerId, reseller_store_id: event.resellerStoreId, type: event.type, payload: eventPayload(id, event, now) };
  });
  const { rows: deliveries } = await sql<QueuedDelivery>`
    with e as (
      select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as e(id text, owner_id text, reseller_store_id text, type text, payload text)
    ), inserted as (
      insert into events (id, owner_id, reseller_store_id, type, payload, created_at)
      select id, owner_id, reseller_store_id, type, payload, ${now} from e
    ), target as (
      select e.id as event_id, e.type, e.owner_id, w.id as endpoint_id
      from e join webhook_endpoints w on w.owner_id = e.owner_id
      where case when ${onlyEndpointId}::text is null
        then w.status = 'enabled' and (w.enabled_events @> '["*"]'::jsonb or w.enabled_events @> jsonb_build_array(e.type))
        else w.id = ${onlyEndpointId}::text end
    )
    insert into webhook_deliveries (id, owner_id, endpoint_id, event_id, event_type, status, attempts, schedule_attempts,
      next_attempt_at, queue_message_id, version, created_at, updated_at)
    select ${DELIVERY_ID}, owner_id, endpoint_id, event_id, type, 'pending', 0, 0, ${now}, gen_random_uuid()::text, 1, ${now}, ${now}
    from target
    returning id, endpoint_id as "endpointId", queue_message_id as "queueMessageId"
  `.execute(trx);
  return deliveries;
}
