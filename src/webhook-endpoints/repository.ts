import { sql } from 'kysely';
import type { DeliveryState, DeliveryStatus } from '../../machines/delivery.machine.ts';
import { LockMode, type EntityManager } from '@mikro-orm/postgresql';
import { holdLock } from '../db/locks.ts';
import { messageOfRow } from '../queue/repository.ts';
import type { Orm } from '../db/orm.ts';
import { findPage } from '../db/paging.ts';
import { transactionOf, type Db, type Trx } from '../db/sql.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import { WebhookDelivery, WebhookEndpoint } from './entity.ts';
import type { SealedSecrets } from './signing.ts';

/** The statements of the delivery worker on webhook_deliveries and webhook_endpoints. */

/** A delivery with what attempting it needs: its event's payload and its endpoint. */
export interface DeliveryWork extends DeliveryState {
  id: string;
  ownerId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  queueMessageId: string | null;
  version: number;
  payload: string;
  endpoint: SealedSecrets & { url: string; status: 'enabled' | 'disabled'; failingSince: Date | null; lastFailedAt: Date | null };
}

/** The ORM's driver hands timestamps over as text whatever the declared type says. */
const dateOrNull = (value: Date | string | null) => (value === null ? null : new Date(value));

/** One statement: the delivery, its event and its endpoint; null when the delivery is gone (its endpoint was deleted). */
export async function loadDelivery(db: Db | Trx, deliveryId: string): Promise<DeliveryWork | null> {
  const row = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .select([
      'd.id', 'd.owner_id', 'd.endpoint_id', 'd.event_id', 'd.event_type', 'd.status', 'd.attempts', 'd.schedule_attempts', 'd.queue_message_id', 'd.version',
      'e.payload', 'w.url', 'w.status as endpoint_status', 'w.secret_encrypted', 'w.previous_secret_encrypted', 'w.previous_secret_expires_at',
      'w.failing_since', 'w.last_failed_at',
    ])
    .where('d.id', '=', deliveryId)
    .executeTakeFirst();
  if (!row) return null;
  return {
    id: row.id,
    ownerId: row.owner_id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status as DeliveryStatus,
    attempts: row.attempts,
    scheduleAttempts: row.schedule_attempts,
    queueMessageId: row.queue_message_id,
    version: row.version,
    payload: row.payload,
    endpoint: {
      id: row.endpoint_id,
      url: row.url,
      status: row.endpoint_status as 'enabled' | 'disabled',
      secretEncrypted: row.secret_encrypted,
      previousSecretEncrypted: row.previous_secret_encrypted,
      previousSecretExpiresAt: dateOrNull(row.previous_secret_expires_at),
      failingSince: dateOrNull(row.failing_since),
      lastFailedAt: dateOrNull(row.last_failed_at),
    },
  };
}

export interface AttemptRecord extends DeliveryState {
  id: string;
  /** The version the delivery was read at: the write applies only while it is still there. */
  version: number;
  lastAttemptAt: Date | null;
  nextAttemptAt: Date | null;
  lastResponseStatus: number | null;
  lastError: string | null;
  lastResponseExcerpt: string | null;
  durationMs: number | null;
  queueMessageId: string | null;
  updatedAt: Date;
}

/** Writes an attempt's outcome, freeing its sending slot, unless another worker moved the delivery first; whether it was written. */
export async function recordAttempt(db: Db | Trx, record: AttemptRecord): Promise<boolean> {
  const written = await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      status: record.status,
      attempts: record.attempts,
      schedule_attempts: record.scheduleAttempts,
      // An attempt that was not made (the endpoint is disabled) keeps the last one's time and duration.
      last_attempt_at: record.lastAttemptAt ?? eb.ref('last_attempt_at'),
      duration_ms: record.durationMs ?? eb.ref('duration_ms'),
      next_attempt_at: record.nextAttemptAt,
      last_response_status: record.lastResponseStatus,
      last_error: record.lastError,
      last_response_excerpt: record.lastResponseExcerpt,
      queue_message_id: record.queueMessageId,
      sending_until: null,
      updated_at: record.updatedAt,
      version: eb('version', '+', 1),
    }))
    .where('id', '=', record.id)
    .where('version', '=', record.version)
    .executeTakeFirst();
  return written.numUpdatedRows === 1n;
}

/** Moves a delivery to a new queue message without an attempt (it waits for its turn); whether it was moved. */
export async function moveToMessage(db: Db | Trx, deliveryId: string, version: number, queueMessageId: string, now: Date): Promise<boolean> {
  const moved = await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ queue_message_id: queueMessageId, updated_at: now, version: eb('version', '+', 1) }))
    .where('id', '=', deliveryId)
    .where('version', '=', version)
    .executeTakeFirst();
  return moved.numUpdatedRows === 1n;
}

/**
 * Takes one of the endpoint's `limit` sending slots for the delivery, in the caller's transaction;
 * whether it got one. A slot is held until the attempt is recorded (`recordAttempt` frees it) or
 * `leaseUntil` passes (its worker died). The endpoint's row lock serialises the takers, and each
 * counts in its own statement after the lock, so it sees every slot taken before it: the bound is
 * exact however many workers, in however many processes, race for the endpoint.
 */
export async function takeSendingSlot(
  trx: Trx,
  slot: { ownerId: string; endpointId: string; deliveryId: string; version: number; limit: number; ownerLimit: number; now: Date; leaseUntil: Date },
): Promise<boolean> {
  // The owner's lock, then the endpoint's: every taker locks in this order.
  await sql`select pg_advisory_xact_lock(hashtextextended(${`webhook-owner:${slot.ownerId}`}, 0))`.execute(trx);
  const endpoint = await trx.selectFrom('webhook_endpoints').select('status').where('id', '=', slot.endpointId).forUpdate().executeTakeFirst();
  // Disabled (or deleted) since the delivery was read: nothing more is sent; its next message finds it so.
  if (endpoint?.status !== 'enabled') return false;
  const { taken, ownerTaken } = await trx
    .selectFrom('webhook_deliveries')
    .select((eb) => [
      eb.fn.countAll<string>().filterWhere('endpoint_id', '=', slot.endpointId).as('taken'),
      eb.fn.countAll<string>().as('ownerTaken'),
    ])
    // Through the owner's endpoints (at most 16), so the partial index on sending deliveries serves it.
    .where('endpoint_id', 'in', (eb) => eb.selectFrom('webhook_endpoints').select('id').where('owner_id', '=', slot.ownerId))
    .where('sending_until', '>', slot.now)
    .executeTakeFirstOrThrow();
  if (Number(taken) >= slot.limit || Number(ownerTaken) >= slot.ownerLimit) return false;
  const held = await trx
    .updateTable('webhook_deliveries')
    .set((eb) => ({ sending_until: slot.leaseUntil, version: eb('version', '+', 1) }))
    .where('id', '=', slot.deliveryId)
    .where('version', '=', slot.version)
    .executeTakeFirst();
  return held.numUpdatedRows === 1n;
}

/**
 * Pending deliveries untouched since `staleBefore` and due by then (one waiting for a later attempt
 * has a live message until it is due; the partial index on pending deliveries by
 * `greatest(updated_at, next_attempt_at)` reads only those), not being sent (no sending slot held), whose
 * queue message is gone (`given up`: false) or was given up by pg-boss (`given up`: true, its handler
 * could not record an outcome, e.g. through a long database outage), locked for the caller's
 * transaction. Skips rows another transaction holds.
 */
export async function strandedDeliveries(
  trx: Trx,
  queueName: string,
  staleBefore: Date,
  limit: number,
): Promise<{ id: string; endpointId: string; version: number; givenUp: boolean }[]> {
  const { rows } = await sql<{ id: string; endpoint_id: string; version: number; given_up: boolean }>`
    select d.id, d.endpoint_id, d.version, m.id is not null as given_up
    from webhook_deliveries d
    left join pgboss.job m on ${messageOfRow('m', queueName, 'd.queue_message_id')}
    where d.status = 'pending' and greatest(d.updated_at, d.next_attempt_at) < ${staleBefore}
      and (d.sending_until is null or d.sending_until < now())
      and (m.id is null or m.state = 'failed')
    order by greatest(d.updated_at, d.next_attempt_at)
    limit ${limit}
    for update of d skip locked
  `.execute(trx);
  return rows.map((row) => ({ id: row.id, endpointId: row.endpoint_id, version: row.version, givenUp: row.given_up }));
}

/**
 * Deletes a delivery whose endpoint is gone: one committed by a change whose fan-out read the
 * endpoint just before it was deleted (the delete cannot see it, so it is left behind). A delivery
 * worker finding its delivery unloadable calls it; nothing else would ever end that delivery.
 */
export async function deleteOrphanDelivery(db: Db | Trx, deliveryId: string): Promise<boolean> {
  const deleted = await db
    .deleteFrom('webhook_deliveries as d')
    .where('d.id', '=', deliveryId)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('webhook_endpoints as w').select('w.id').whereRef('w.id', '=', 'd.endpoint_id'))))
    .executeTakeFirst();
  return deleted.numDeletedRows === 1n;
}

/** Ends a pending delivery as `failed` (ABANDON: no attempt follows; it can be retried by hand), at the version read. */
export async function abandonDelivery(db: Db | Trx, deliveryId: string, version: number, error: string, now: Date): Promise<boolean> {
  const moved = await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ status: 'failed', next_attempt_at: null, last_error: error, queue_message_id: null, updated_at: now, version: eb('version', '+', 1) }))
    .where('id', '=', deliveryId)
    .where('version', '=', version)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return moved.numUpdatedRows === 1n;
}

/** How many `ping` deliveries the endpoint was given since `since` (the test route's rate limit). */
export async function pingsSince(trx: Trx, endpointId: string, since: Date): Promise<number | null> {
  const locked = await trx.selectFrom('webhook_endpoints').select('id').where('id', '=', endpointId).forUpdate().executeTakeFirst();
  if (!locked) return null;
  const { count } = await trx
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('endpoint_id', '=', endpointId)
    .where('event_type', '=', 'ping')
    .where('created_at', '>', since)
    .executeTakeFirstOrThrow();
  return Number(count);
}

/** A delivery to the endpoint succeeded: its run of failures, if any, is over. */
export async function markEndpointHealthy(db: Db | Trx, endpointId: string): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', endpointId).where('failing_since', 'is not', null).execute();
}

/**
 * A delivery to the endpoint failed, in the caller's transaction: its run of failures starts now
 * unless one is going on, and an enabled endpoint failing since `disableIfFailingSince` or earlier
 * is disabled with `reason`. A run goes on while each failure follows the one before by no more than
 * a delivery's attempts can span: a failure when the last one was before `newRunIfLastFailedBefore`
 * (a quiet spell, no delivery being retried in between) starts a new run rather than counting the
 * quiet days as failing ones. Returns whether this call disabled it.
 */
export async function markEndpointFailing(
  trx: Trx,
  endpointId: string,
  now: Date,
  disableIfFailingSince: Date,
  newRunIfLastFailedBefore: Date,
  reason: string,
): Promise<boolean> {
  const endpoint = await trx
    .selectFrom('webhook_endpoints')
    .select(['status', 'failing_since', 'last_failed_at'])
    .where('id', '=', endpointId)
    .forUpdate()
    .executeTakeFirst();
  if (!endpoint) return false;
  const runningSince = dateOrNull(endpoint.failing_since);
  const lastFailedAt = dateOrNull(endpoint.last_failed_at) ?? runningSince;
  const goesOn = runningSince !== null && lastFailedAt !== null && lastFailedAt >= newRunIfLastFailedBefore;
  const failingSince = goesOn ? runningSince : now;
  const disable = endpoint.status === 'enabled' && failingSince <= disableIfFailingSince;
  await trx
    .updateTable('webhook_endpoints')
    .set({
      failing_since: failingSince,
      // Attempts recorded out of order (a slow one after a later one) never move it back.
      last_failed_at: lastFailedAt !== null && lastFailedAt > now ? lastFailedAt : now,
      ...(disable && { status: 'disabled', disabled_reason: reason, updated_at: now }),
    })
    .where('id', '=', endpointId)
    .execute();
  return disable;
}

/** When the oldest pending delivery was created (a metric); null when none is pending. */
export async function oldestPendingDeliveryAt(db: Db): Promise<Date | null> {
  const { oldest } = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.min('created_at').as('oldest'))
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return dateOrNull(oldest as Date | string | null);
}

/** SQLSTATE of a transaction PostgreSQL ended to break a deadlock. */
const DEADLOCK_DETECTED = '40P01';

/** The endpoints' API's data access: the request's unit of work (`orm.em`) on webhook_endpoints and webhook_deliveries. */
export class WebhookEndpointRepository {
  constructor(private readonly orm: Orm) {}

  private get em(): EntityManager {
    return this.orm.em;
  }

  /**
   * Inserts the endpoint `build` makes from the number of endpoints the owner has (it throws to
   * refuse), under a lock per owner: concurrent creations cannot pass a limit together.
   */
  insertCounted(ownerId: string, build: (count: number) => WebhookEndpoint): Promise<WebhookEndpoint> {
    return this.em.transactional(async (em) => {
      await holdLock(transactionOf(em), `webhook_endpoints:${ownerId}`);
      return em.create(WebhookEndpoint, build(await em.count(WebhookEndpoint, { ownerId })));
    });
  }

  list(ownerId: string, page: PageQuery): Promise<Page<WebhookEndpoint>> {
    return findPage(this.em, WebhookEndpoint, { ownerId }, page);
  }

  findOwned(ownerId: string, id: string): Promise<WebhookEndpoint | null> {
    return this.em.findOne(WebhookEndpoint, { id, ownerId });
  }

  /**
   * `change` made to the owner's endpoint read FOR UPDATE, written when it returns (null when there
   * is no such endpoint): concurrent changes of one endpoint (two rotations, a rotation and a PATCH)
   * apply one after the other, so a rotation always keeps the secret the one before it made.
   */
  changeOwned<T>(ownerId: string, id: string, change: (endpoint: WebhookEndpoint) => T): Promise<{ endpoint: WebhookEndpoint; result: T } | null> {
    return this.em.transactional(async (em) => {
      const endpoint = await em.findOne(WebhookEndpoint, { id, ownerId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      return endpoint && { endpoint, result: change(endpoint) };
    });
  }

  /** Deletes the endpoint and its deliveries: their queued messages find nothing and stop. */
  async deleteWithDeliveries(endpointId: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.em.transactional(async (em) => {
          // The endpoint's row first, as a sender taking a slot locks it before its delivery; a delete
          // that took the deliveries first deadlocked with it under load (a 500).
          await em.execute('select id from webhook_endpoints where id = ? for update', [endpointId]);
          await em.nativeDelete(WebhookDelivery, { endpointId });
          await em.nativeDelete(WebhookEndpoint, { id: endpointId });
        });
        return;
      } catch (error) {
        // A sender recording an attempt holds its delivery, then the endpoint: PostgreSQL ends one of
        // the two, and the delete is simply tried again.
        if (attempt >= 3 || (error as { code?: string }).code !== DEADLOCK_DETECTED) throw error;
      }
    }
  }

  /** `work` in one transaction (the outbox and the queue join it through `trx`). */
  transaction<T>(work: (trx: Trx) => Promise<T>): Promise<T> {
    return this.em.transactional((em) => work(transactionOf(em)));
  }

  findDelivery(id: string): Promise<WebhookDelivery> {
    return this.em.findOneOrFail(WebhookDelivery, { id });
  }

  listDeliveries(endpointId: string, filters: { status?: WebhookDelivery['status'] | undefined; event_id?: string | undefined } & PageQuery): Promise<Page<WebhookDelivery>> {
    return findPage(
      this.em,
      WebhookDelivery,
      {
        endpointId,
        ...(filters.status !== undefined && { status: filters.status }),
        ...(filters.event_id !== undefined && { eventId: filters.event_id }),
      },
      filters,
    );
  }

  /**
   * `change` in one transaction with the endpoint's delivery (null when it has none by this id):
   * what it changes on the delivery is written when it returns, with what it wrote through `trx`.
   * The transaction holds the delivery's event (FOR SHARE): event pruning skips an event held so
   * (src/events/repository.ts), and once it has deleted one, the delivery went with it (null), so a
   * retry never leaves a pending delivery whose event is gone.
   */
  changeDelivery<T>(ownerId: string, endpointId: string, deliveryId: string, change: (delivery: WebhookDelivery | null, trx: Trx) => Promise<T>): Promise<T> {
    return this.em.transactional(async (em) => {
      const trx = transactionOf(em);
      const found = await em.findOne(WebhookDelivery, { id: deliveryId, endpointId, ownerId });
      // Its event first, then the delivery: the order pruning locks them in (src/events/repository.ts), so the two never wait on each other.
      const eventKept = found !== null && (await trx.selectFrom('events').select('id').where('id', '=', found.eventId).forShare().executeTakeFirst()) !== undefined;
      const delivery = eventKept ? await em.findOne(WebhookDelivery, { id: deliveryId, endpointId, ownerId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true }) : null;
      return change(delivery, trx);
    });
  }
}
