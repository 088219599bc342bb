import { sql, type RawBuilder } from 'kysely';
import type { Orm } from '../db/orm.ts';
import { sqlOf, type Trx } from '../db/sql.ts';
import { takeTurn } from '../db/locks.ts';
import { findPage } from '../db/paging.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import { EventRecord } from './entity.ts';
import { firstIdAt, newId } from '../shared/ids.ts';
import type { NewEvent } from './types.ts';
import { PREPARED } from '../db/prepared.ts';
import { StatementShapes, type SlotsOf } from '../db/statement-shapes.ts';

/** A delivery the fan-out created, with the queue message id its row expects. */
export interface QueuedDelivery {
  id: string;
  endpointId: string;
  queueMessageId: string;
}

interface EventRow {
  id: string;
  owner_id: string;
  reseller_store_id: string | null;
  type: string;
  payload: string;
}

/**
 * A time-sortable `dlv_` id made by the database: the millisecond clock in hex, as the first 48 bits
 * of a UUIDv7 are (so ids sort by creation and serve as paging cursors like every other id), then
 * random hex. Made in SQL because the fan-out learns how many deliveries there are only as it
 * inserts them; PostgreSQL 13 has no uuidv7().
 */
const DELIVERY_ID = sql<string>`'dlv_' || lpad(to_hex(floor(extract(epoch from clock_timestamp()) * 1000)::bigint), 12, '0') || substr(replace(gen_random_uuid()::text, '-', ''), 13)`;

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

function eventRows(events: NewEvent[], now: Date): EventRow[] {
  return events.map((event) => {
    const id = newId('event');
    return { id, owner_id: event.ownerId, reseller_store_id: event.resellerStoreId, type: event.type, payload: eventPayload(id, event, now) };
  });
}

/** Endpoint `w` is subscribed to event `e` (its `type`): it gets a delivery of it. */
const SUBSCRIBED = sql<boolean>`w.status = 'enabled' and (w.enabled_events @> '["*"]'::jsonb or w.enabled_events @> jsonb_build_array(e.type))`;

/**
 * Events built before the statement that inserts them (`insertReadyEventsStep`) runs: their rows,
 * ids and payloads made, each with its creation time.
 */
export type ReadyEvent = EventRow & { created_at: Date };

export function readyEvents(events: NewEvent[], now = new Date()): ReadyEvent[] {
  return eventRows(events, now).map((row) => ({ ...row, created_at: now }));
}

/** The columns of a jsonb array of `ReadyEvent`s, for jsonb_to_recordset. */
const READY_COLUMNS = sql`(id text, owner_id text, reseller_store_id text, type text, payload text, created_at timestamptz)`;

/**
 * SQL condition: some endpoint is subscribed to one of these ready events (`events`, a jsonb
 * array expression of `ReadyEvent`s), so they need deliveries and `insertReadyEventsStep`
 * must not insert them: the caller appends them to the outbox instead (`Outbox.append`).
 */
export function subscribedToAny(events: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`exists ${subscriptionsTo(sql`jsonb_to_recordset(${events}) as e${READY_COLUMNS}`)}`;
}

/** The subscriptions of endpoints to the events of `events` (a relation aliased `e`, with `owner_id` and `type`), for `exists`. */
const subscriptionsTo = (events: RawBuilder<unknown>) => sql`(select 1 from ${events} join webhook_endpoints w on w.owner_id = e.owner_id where ${SUBSCRIBED})`;

/**
 * A step of another statement inserting ready events no endpoint is subscribed to (the
 * statement checked `subscribedToAny` first), so they need no deliveries and commit with that
 * statement alone. `source` selects one column: jsonb arrays of `ReadyEvent`s.
 */
export function insertReadyEventsStep(source: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`(
    insert into events (id, owner_id, reseller_store_id, type, payload, created_at)
    select e.id, e.owner_id, e.reseller_store_id, e.type, e.payload, e.created_at
    from (${source}) as s(events) cross join lateral jsonb_to_recordset(s.events) as e${READY_COLUMNS})`;
}

/**
 * A relation of ready events, each with the id of the row it is about (`about`), read from a jsonb
 * array once: for a statement that writes those rows and, when `noEndpointSubscribes`, their events
 * (`insertReadyEventRowsStep`), so the events need no round trip of their own.
 */
export function readyEventsAbout(json: unknown): RawBuilder<ReadyEvent & { about: string }> {
  return sql`(select * from jsonb_to_recordset(${json}::jsonb) as e(id text, owner_id text, reseller_store_id text, type text, payload text, created_at timestamptz, about text))`;
}

/** SQL condition: no endpoint subscribes to any event of the relation named `events` (see `readyEventsAbout`). */
export function noEndpointSubscribes(events: string): RawBuilder<boolean> {
  return sql<boolean>`not exists ${subscriptionsTo(sql`${sql.table(events)} as e`)}`;
}

/** A step of another statement inserting the ready events `source` selects (with the columns of `readyEventsAbout`). */
export function insertReadyEventRowsStep(source: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`(
    insert into events (id, owner_id, reseller_store_id, type, payload, created_at)
    select e.id, e.owner_id, e.reseller_store_id, e.type, e.payload, e.created_at from (${source}) as e)`;
}

/**
 * One statement: the events, and one pending delivery per event and enabled endpoint of its owner
 * subscribed to its type (or, with `onlyEndpointId`, to that endpoint alone: a test send). Returns
 * the deliveries, whose queue messages the caller inserts in the same transaction.
 */
export async function insertEventsWithDeliveries(trx: Trx, events: NewEvent[], onlyEndpointId: string | null = null): Promise<QueuedDelivery[]> {
  const now = new Date();
  const shape = onlyEndpointId === null ? 'subscribed' : 'one endpoint';
  return statements.rows(trx, shape, (slots) => eventsWithDeliveries(trx, onlyEndpointId !== null, slots), [JSON.stringify(eventRows(events, now)), now, onlyEndpointId]);
}

/** The hot statements of this module, each built once per shape (src/db/statement-shapes.ts). */
const statements = new StatementShapes();

/** `insertEventsWithDeliveries`'s statement: to the subscribed endpoints or to the one in its slot. */
function eventsWithDeliveries(trx: Trx, toOneEndpoint: boolean, [rows, now, onlyEndpointId]: SlotsOf<[string, Date, string | null]>) {
  return trx
    // (A raw CTE body is not parenthesised by Kysely, hence the parentheses.)
    .with(
      'e',
      () => sql<EventRow>`(
        select * from jsonb_to_recordset(${rows}::jsonb) as e(id text, owner_id text, reseller_store_id text, type text, payload text))`,
    )
    .with('inserted', (db) =>
      db
        .insertInto('events')
        .columns(['id', 'owner_id', 'reseller_store_id', 'type', 'payload', 'created_at'])
        .expression((eb) => eb.selectFrom('e').select(['id', 'owner_id', 'reseller_store_id', 'type', 'payload', eb.val(now.typed<Date>()).as('created_at')])),
    )
    .with('target', (db) =>
      db
        .selectFrom('e')
        .innerJoin('webhook_endpoints as w', 'w.owner_id', 'e.owner_id')
        .select(['e.id as event_id', 'e.type', 'e.owner_id', 'w.id as endpoint_id'])
        .where((eb) =>
          toOneEndpoint
            ? eb('w.id', '=', onlyEndpointId.typed<string>())
            : SUBSCRIBED,
        ),
    )
    .insertInto('webhook_deliveries')
    .columns([
      'id', 'owner_id', 'endpoint_id', 'event_id', 'event_type', 'status', 'attempts', 'schedule_attempts',
      'next_attempt_at', 'queue_message_id', 'version', 'created_at', 'updated_at',
    ])
    .expression((eb) =>
      eb
        .selectFrom('target')
        .select([
          DELIVERY_ID.as('id'),
          'owner_id',
          'endpoint_id',
          'event_id',
          'type as event_type',
          eb.val('pending').as('status'),
          eb.lit(0).as('attempts'),
          eb.lit(0).as('schedule_attempts'),
          eb.val(now.typed<Date>()).as('next_attempt_at'),
          sql<string>`gen_random_uuid()::text`.as('queue_message_id'),
          eb.lit(1).as('version'),
          eb.val(now.typed<Date>()).as('created_at'),
          eb.val(now.typed<Date>()).as('updated_at'),
        ]),
    )
    .returning(['id', 'endpoint_id as endpointId', sql<string>`queue_message_id`.as('queueMessageId')])
    .modifyEnd(PREPARED);
}

/**
 * Deletes up to `limit` events created before `before`, oldest first, with their deliveries; an event
 * with a delivery still pending is kept until it ends. Returns how many went.
 */
export async function pruneEventsBefore(trx: Trx, before: Date, limit: number): Promise<number> {
  // Locked first, decided after: a delivery's manual retry holds its event (FOR SHARE, webhook-endpoints'
  // changeDelivery) while it sets the delivery back to pending. An event held now is skipped; one whose
  // retry committed since this statement began is seen pending by the next statement, which reads anew.
  const { rows: locked } = await sql<{ id: string }>`
    select e.id from events e
    where e.id < ${firstIdAt('event', before)}
      and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending')
    order by e.id limit ${limit}
    for update of e skip locked`.execute(trx);
  if (locked.length === 0) return 0;
  const { rows } = await sql<{ id: string }>`
    with doomed as (
      select e.id from events e
      where e.id = any(${locked.map((row) => row.id)}::text[])
        and not exists (select 1 from webhook_deliveries d where d.event_id = e.id and d.status = 'pending')
    ),
    deliveries as (delete from webhook_deliveries d using doomed where d.event_id = doomed.id)
    delete from events e using doomed where e.id = doomed.id
    returning e.id`.execute(trx);
  return rows.length;
}

export interface EventFilters extends PageQuery {
  type?: string | undefined;
  reseller_store_id?: string | undefined;
  created_after?: string | undefined;
  created_before?: string | undefined;
}

/** The events API's reads (GET /v1/events). */
export class EventRepository {
  constructor(private readonly orm: Orm) {}

  /**
   * One batch of `pruneEventsBefore`, on this process's turn (processes take turns): how many
   * events went, or null when another process has the turn.
   */
  pruneOnTurn(before: Date, limit: number): Promise<number | null> {
    return sqlOf(this.orm)
      .transaction()
      .execute(async (trx) => ((await takeTurn(trx, 'events.prune')) ? pruneEventsBefore(trx, before, limit) : null));
  }

  /** The user's events (those of their stores, and their endpoints' pings), newest first. */
  list(ownerId: string, filters: EventFilters): Promise<Page<EventRecord>> {
    const createdAt = {
      ...(filters.created_after !== undefined && { $gt: new Date(filters.created_after) }),
      ...(filters.created_before !== undefined && { $lt: new Date(filters.created_before) }),
    };
    return findPage(
      this.orm.em,
      EventRecord,
      {
        ownerId,
        ...(filters.type !== undefined && { type: filters.type }),
        ...(filters.reseller_store_id !== undefined && { resellerStoreId: filters.reseller_store_id }),
        ...(Object.keys(createdAt).length > 0 && { createdAt }),
      },
      filters,
    );
  }

  findOwned(ownerId: string, id: string): Promise<EventRecord | null> {
    return this.orm.em.findOne(EventRecord, { id, ownerId });
  }
}
