import { sql } from 'kysely';
import type { Db, Trx } from '../db/sql.ts';
import type { DeliveryState } from '../../machines/delivery.machine.ts';
import type { SealedSecrets } from './signing.ts';


/** A delivery with what attempting it needs: its event's payload and its endpoint. */
export interface DeliveryWork extends DeliveryState {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  queueMessageId: string | null;
  version: number;
  payload: string;
  endpoint: SealedSecrets & { url: string; status: 'enabled' | 'disabled' };
}

interface DeliveryWorkRow {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryState['status'];
  attempts: number;
  schedule_attempts: number;
  queue_message_id: string | null;
  version: number;
  payload: string;
  url: string;
  endpoint_status: 'enabled' | 'disabled';
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  /** The ORM's driver leaves timestamps as text. */
  previous_secret_expires_at: string | Date | null;
}

/** One statement: the delivery, its event and its endpoint; null when the delivery is gone (its endpoint was deleted). */
export async function loadDelivery(db: Db | Trx, deliveryId: string): Promise<DeliveryWork | null> {
  const { rows } = await sql<DeliveryWorkRow>`
    select d.id, d.endpoint_id, d.event_id, d.event_type, d.status, d.attempts, d.schedule_attempts, d.queue_message_id, d.version,
      e.payload, w.url, w.status as endpoint_status, w.secret_encrypted, w.previous_secret_encrypted, w.previous_secret_expires_at
    from webhook_deliveries d
    join events e on e.id = d.event_id
    join webhook_endpoints w on w.id = d.endpoint_id
    where d.id = ${deliveryId}
  `.execute(db);
  const row = rows[0];
  if (!row) return null;
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    scheduleAttempts: row.schedule_attempts,
    queueMessageId: row.queue_message_id,
    version: row.version,
    payload: row.payload,
    endpoint: {
      id: row.endpoint_id,
      url: row.url,
      status: row.endpoint_status,
      secretEncrypted: row.secret_encrypted,
      previousSecretEncrypted: row.previous_secret_encrypted,
      previousSecretExpiresAt: row.previous_secret_expires_at === null ? null : new Date(row.previous_secret_expires_at),
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
  const { rows } = await sql<{ id: string }>`
    update webhook_deliveries set
      status = ${record.status}, attempts = ${record.attempts}, schedule_attempts = ${record.scheduleAttempts},
      last_attempt_at = coalesce(${record.lastAttemptAt}::timestamptz, last_attempt_at), next_attempt_at = ${record.nextAttemptAt},
      last_response_status = ${record.lastResponseStatus}, last_error = ${record.lastError},
      last_response_excerpt = ${record.lastResponseExcerpt}, duration_ms = coalesce(${record.durationMs}::int, duration_ms),
      queue_message_id = ${record.queueMessageId}, sending_until = null, updated_at = ${record.updatedAt}, version = version + 1
    where id = ${record.id} and version = ${record.version}
    returning id
  `.execute(db);
  return rows.length === 1;
}

/** Moves a delivery to a new queue message without an attempt (it waits for its turn); whether it was moved. */
export async function moveToMessage(db: Db | Trx, deliveryId: string, version: number, queueMessageId: string, now: Date): Promise<boolean> {
  const { rows } = await sql<{ id: string }>`
    update webhook_deliveries set queue_message_id = ${queueMessageId}, updated_at = ${now}, version = version + 1
    where id = ${deliveryId} and version = ${version}
    returning id
  `.execute(db);
  return rows.length === 1;
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
  slot: { endpointId: string; deliveryId: string; version: number; limit: number; now: Date; leaseUntil: Date },
): Promise<boolean> {
  await sql`select id from webhook_endpoints where id = ${slot.endpointId} for update`.execute(trx);
  const { rows } = await sql<{ count: string | number }>`
    select count(*) as count from webhook_deliveries where endpoint_id = ${slot.endpointId} and sending_until > ${slot.now}
  `.execute(trx);
  if (Number(rows[0]?.count ?? 0) >= slot.limit) return false;
  const { rows: taken } = await sql<{ id: string }>`
    update webhook_deliveries set sending_until = ${slot.leaseUntil}, version = version + 1
    where id = ${slot.deliveryId} and version = ${slot.version}
    returning id
  `.execute(trx);
  return taken.length === 1;
}

/** A delivery to the endpoint succeeded: its run of failures, if any, is over. */
export async function markEndpointHealthy(db: Db | Trx, endpointId: string): Promise<void> {
  await sql`update webhook_endpoints set failing_since = null where id = ${endpointId} and failing_since is not null`.execute(db);
}

/**
 * A delivery to the endpoint failed: its run of failures starts now unless one is going on, and an
 * enabled endpoint failing since `disableIfFailingSince` or earlier is disabled with `reason`.
 * Returns whether this call disabled it.
 */
export async function markEndpointFailing(db: Db | Trx, endpointId: string, now: Date, disableIfFailingSince: Date, reason: string): Promise<boolean> {
  const { rows } = await sql<{ disabled: boolean }>`
    with current as (
      select id, status = 'enabled' and coalesce(failing_since, ${now}) <= ${disableIfFailingSince} as disable
      from webhook_endpoints where id = ${endpointId} for update
    )
    update webhook_endpoints w set
      failing_since = coalesce(w.failing_since, ${now}),
      status = case when c.disable then 'disabled' else w.status end,
      disabled_reason = case when c.disable then ${reason} else w.disabled_reason end,
      updated_at = case when c.disable then ${now} else w.updated_at end
    from current c where w.id = c.id
    returning c.disable as disabled
  `.execute(db);
  return rows[0]?.disabled === true;
}

/** When the oldest pending delivery was created (a metric); null when none is pending. */
export async function oldestPendingDeliveryAt(db: Db): Promise<Date | null> {
  const { rows } = await sql<{ created_at: string | Date | null }>`select min(created_at) as created_at from webhook_deliveries where status = 'pending'`.execute(db);
  const oldest = rows[0]?.created_at;
  return oldest ? new Date(oldest) : null;
}
