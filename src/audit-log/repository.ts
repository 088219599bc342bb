import type { EntityManager } from '@mikro-orm/postgresql';
import { sql, type Expression, type QueryCreator, type Transaction } from 'kysely';
import { holdLock } from '../db/locks.ts';
import type { Orm } from '../db/orm.ts';
import type { Database } from '../db/schema.ts';
import { newId } from '../shared/ids.ts';
import { findPage } from '../db/paging.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import { AuditEntry } from './entity.ts';

/** One audit entry to write; entries are never updated or deleted. */
export interface AuditRecord {
  ownerId: string;
  resellerStoreId: string;
  action: string;
  resourceType: string;
  resourceId: string;
  actorId: string;
  metadata?: Record<string, unknown>;
}

export const SYSTEM_ACTOR = 'system';

/** An audit_entries row as a statement produces it (`AuditLogRepository.insertFrom`). */
export interface AuditRow {
  id: string;
  owner_id: string;
  reseller_store_id: string;
  action: string;
  resource_type: string;
  resource_id: string;
  metadata: unknown;
  actor_id: string;
  created_at: Date;
}

export interface AuditFilters extends PageQuery {
  reseller_store_id?: string | undefined;
  action?: string | undefined;
  resource_id?: string | undefined;
}

/*
 * Every statement on audit_entries. An entry is always written in the transaction of the change it
 * describes, by one call per kind of transaction: `recordAudit` (an ORM unit of work), `insertAudit`
 * (a Kysely transaction) or `insertAuditFrom` (a step of a hot path's single statement). A record
 * that must accompany every audited change (an outbox event) is a sibling call next to each.
 */

/** Adds the entry to the caller's unit of work: it commits or rolls back with the change. */
export function recordAudit(em: EntityManager, record: AuditRecord): void {
  em.create(AuditEntry, { id: newId('auditEntry'), metadata: {}, createdAt: new Date(), ...record });
}

/** Inserts entries in the caller's Kysely transaction. */
/** Writes one entry in a unit of work of its own (an event with no other change, e.g. a refused order). */
export async function writeAudit(orm: Orm, record: AuditRecord): Promise<void> {
  const em = orm.em.fork();
  recordAudit(em, record);
  await em.flush();
}

export async function insertAudit(trx: Transaction<Database>, records: AuditRecord[], at = new Date()): Promise<void> {
  if (records.length === 0) return;
  await trx.insertInto('audit_entries').values(records.map((record) => rowOf(record, at))).execute();
}

const AUDIT_COLUMNS = ['id', 'owner_id', 'reseller_store_id', 'action', 'resource_type', 'resource_id', 'metadata', 'actor_id', 'created_at'] as const;

/**
 * `insert into audit_entries … <rows>` as a step (CTE) of a larger statement, so a hot path writes
 * its change and the change's audit entries in one round trip. `rows` selects the entries' columns
 * by name (`AuditRow`).
 */
export function insertAuditFrom<DB extends Database>(db: QueryCreator<DB>, rows: Expression<AuditRow>) {
  return (db as unknown as QueryCreator<Database>).insertInto('audit_entries').columns(AUDIT_COLUMNS).expression(rows);
}

/**
 * The entry, unless the resource already has one with its action (decided under an advisory lock
 * on `lockKey`), or, given `sameAs`, one with its action whose metadata has those values, each equal
 * (one per resource and subject: a shipment, say); whether it was inserted now.
 */
export async function insertAuditOnce(trx: Transaction<Database>, record: AuditRecord, lockKey: string, sameAs?: Record<string, unknown>): Promise<boolean> {
  await holdLock(trx, lockKey);
  const row = rowOf(record, new Date());
  const { numInsertedOrUpdatedRows } = await trx
    .insertInto('audit_entries')
    .columns(AUDIT_COLUMNS)
    .expression(
      trx
        .selectNoFrom((eb) => [
          eb.val(row.id).as('id'),
          eb.val(row.owner_id).as('owner_id'),
          eb.val(row.reseller_store_id).as('reseller_store_id'),
          eb.val(row.action).as('action'),
          eb.val(row.resource_type).as('resource_type'),
          eb.val(row.resource_id).as('resource_id'),
          sql<unknown>`${row.metadata}::jsonb`.as('metadata'),
          eb.val(row.actor_id).as('actor_id'),
          eb.val(row.created_at).as('created_at'),
        ])
        .where(({ not, exists, selectFrom }) =>
          not(
            exists(
              selectFrom('audit_entries')
                .select(sql.lit(1).as('one'))
                .where('resource_id', '=', record.resourceId)
                .where('action', '=', record.action)
                .where('reseller_store_id', '=', record.resellerStoreId)
                // Each value equal, not contained: an array (tracking numbers) contains its subsets, [] among them.
                .$if(sameAs !== undefined && Object.keys(sameAs).length > 0, (query) =>
                  query.where(sql<boolean>`${sql.join(Object.entries(sameAs!).map(([key, value]) => sql`metadata -> ${key}::text = ${JSON.stringify(value)}::jsonb`), sql` and `)}`),
                ),
            ),
          ),
        ),
    )
    .executeTakeFirst();
  return Number(numInsertedOrUpdatedRows ?? 0) === 1;
}

/** Reads of the audit log (GET /v1/audit_log). */
export class AuditLogRepository {
  constructor(private readonly orm: Orm) {}

  list(ownerId: string, filters: AuditFilters): Promise<Page<AuditEntry>> {
    return findPage(
      this.orm.em,
      AuditEntry,
      {
        ownerId,
        ...(filters.reseller_store_id !== undefined && { resellerStoreId: filters.reseller_store_id }),
        ...(filters.action !== undefined && { action: filters.action }),
        ...(filters.resource_id !== undefined && { resourceId: filters.resource_id }),
      },
      filters,
    );
  }
}

function rowOf(record: AuditRecord, at: Date) {
  return {
    id: newId('auditEntry'),
    owner_id: record.ownerId,
    reseller_store_id: record.resellerStoreId,
    action: record.action,
    resource_type: record.resourceType,
    resource_id: record.resourceId,
    metadata: JSON.stringify(record.metadata ?? {}),
    actor_id: record.actorId,
    created_at: at,
  };
}
