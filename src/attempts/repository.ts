import { sql } from 'kysely';
import { insertAuditFrom, type AuditRecord } from '../audit-log/repository.ts';
import type { Db, Trx } from '../db/sql.ts';
import { newId } from '../shared/ids.ts';
import type { AttemptRow, AttemptTable } from './kind.ts';

/** A row's state after a transition, its result column's value, and the audit entry written with it, if any. */
export interface AttemptWrite<R extends AttemptRow = AttemptRow> {
  row: R;
  result: string | null;
  audit?: AuditRecord | undefined;
}

/** One transition as the statement reads it (jsonb_to_recordset). */
interface TransitionValues {
  id: string;
  version: number;
  status: string;
  attempts: number;
  retries_left: number;
  error_message: string | null;
  completed_at: Date | null;
  failed_at: Date | null;
  dead_at: Date | null;
  result: string | null;
  queue_message_id: string | null;
  updated_at: Date;
  audit_id: string | null;
  audit_owner_id: string | null;
  audit_reseller_store_id: string | null;
  audit_action: string | null;
  audit_resource_type: string | null;
  audit_resource_id: string | null;
  audit_metadata: unknown;
  audit_actor_id: string | null;
}

/**
 * The statement every table of retried work shares (used by the sync-jobs and fulfillments
 * repositories): each row's lifecycle columns, written only where the row is still at the version
 * it was read at, with its audit entry if it has one, in one round trip. Returns whether each was
 * written; the rows written have their `version` brought up to date. A transition that lost a race
 * (another worker, a manual retry) is thus a no-op rather than an overwrite.
 */
export async function writeAttemptTransitions<R extends AttemptRow>(
  db: Db | Trx,
  table: AttemptTable,
  resultColumn: string,
  writes: AttemptWrite<R>[],
): Promise<boolean[]> {
  if (writes.length === 0) return [];
  const values: TransitionValues[] = writes.map(({ row, result, audit }) => ({
    id: row.id,
    version: row.version,
    status: row.status,
    attempts: row.attempts,
    retries_left: row.retriesLeft,
    error_message: row.errorMessage ?? null,
    completed_at: row.completedAt ?? null,
    failed_at: row.failedAt ?? null,
    dead_at: row.deadAt ?? null,
    result,
    queue_message_id: row.queueMessageId ?? null,
    updated_at: row.updatedAt,
    audit_id: audit ? newId('auditEntry') : null,
    audit_owner_id: audit?.ownerId ?? null,
    audit_reseller_store_id: audit?.resellerStoreId ?? null,
    audit_action: audit?.action ?? null,
    audit_resource_type: audit?.resourceType ?? null,
    audit_resource_id: audit?.resourceId ?? null,
    audit_metadata: audit ? (audit.metadata ?? {}) : null,
    audit_actor_id: audit?.actorId ?? null,
  }));
  const rows = await db
    .with(
      'v',
      () => sql<TransitionValues>`(
        select * from jsonb_to_recordset(${JSON.stringify(values)}::jsonb) as v(
          id text, version int, status text, attempts int, retries_left int, error_message text, completed_at timestamptz,
          failed_at timestamptz, dead_at timestamptz, result text, queue_message_id text, updated_at timestamptz,
          audit_id text, audit_owner_id text, audit_reseller_store_id text, audit_action text, audit_resource_type text,
          audit_resource_id text, audit_metadata jsonb, audit_actor_id text))`,
    )
    .with(
      'written',
      () => sql<{ id: string; read_version: number; version: number }>`(
        update ${sql.table(table)} as t set
          status = v.status, attempts = v.attempts, retries_left = v.retries_left, error_message = v.error_message,
          completed_at = v.completed_at, failed_at = v.failed_at, dead_at = v.dead_at, ${sql.ref(resultColumn)} = v.result,
          queue_message_id = v.queue_message_id, updated_at = v.updated_at, version = t.version + 1
        from v where t.id = v.id and t.version = v.version
        returning t.id, v.version as read_version, t.version)`,
    )
    .with('audited', (db) =>
      insertAuditFrom(
        db,
        db
          .selectFrom('written')
          .innerJoin('v', 'v.id', 'written.id')
          .where('v.audit_id', 'is not', null)
          .select([
            sql<string>`v.audit_id`.as('id'),
            sql<string>`v.audit_owner_id`.as('owner_id'),
            sql<string>`v.audit_reseller_store_id`.as('reseller_store_id'),
            sql<string>`v.audit_action`.as('action'),
            sql<string>`v.audit_resource_type`.as('resource_type'),
            sql<string>`v.audit_resource_id`.as('resource_id'),
            sql<unknown>`v.audit_metadata`.as('metadata'),
            sql<string>`v.audit_actor_id`.as('actor_id'),
            sql<Date>`v.updated_at`.as('created_at'),
          ]),
      ),
    )
    .selectFrom('written')
    .select(['id', 'read_version', 'version'])
    .execute();
  return writes.map(({ row }) => {
    const written = rows.find((w) => w.id === row.id && w.read_version === row.version);
    if (written) row.version = written.version;
    return written !== undefined;
  });
}
