/**
 * Every statement on `divergences`, the reseller's to-do list. Entries are raised and resolved in
 * the transaction of the change that causes them: `raiseDivergence` / `resolveDivergences` take the
 * caller's transaction (the cancellation feature raises too_late, unsupported, supplier_cancelled
 * and cancellation_dead through them); deaths and completions of jobs and fulfillments are written
 * by the attempt transition statement itself (`transitionDivergences`).
 */
import { sql, type RawBuilder } from 'kysely';
import type { Orm } from '../db/orm.ts';
import { sqlOf, type Db, type Trx } from '../db/sql.ts';
import { newId } from '../shared/ids.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import { validationFailed } from '../shared/errors.ts';
import { DIVERGENCE_TYPES, type DivergenceStatus, type DivergenceType } from './entity.ts';

export interface NewDivergence {
  ownerId: string;
  resellerStoreId: string;
  syncJobId: string;
  type: DivergenceType;
  /** The job, fulfillment or cancellation it is about; default the job. */
  subjectId?: string;
  detail: string | null;
  since?: Date;
}

export interface DivergenceRow {
  id: string;
  ownerId: string;
  resellerStoreId: string;
  syncJobId: string;
  type: DivergenceType;
  status: DivergenceStatus;
  subjectId: string;
  detail: string | null;
  since: Date;
  resolvedAt: Date | null;
  dismissedAt: Date | null;
}

/** The partial unique index: one open-or-dismissed entry per job and type. */
const ONE_PER_JOB_AND_TYPE = sql`(sync_job_id, type) where status in ('open', 'dismissed')`;

/**
 * Raises an entry in the caller's transaction. Null when the job already has an open entry of that
 * type, or a dismissed one (a dismissed entry is never raised again for the same job and type).
 */
export async function raiseDivergence(trx: Trx | Db, entry: NewDivergence): Promise<string | null> {
  const id = newId('divergence');
  const { rows } = await sql<{ id: string }>`
    insert into divergences (id, owner_id, reseller_store_id, sync_job_id, type, status, subject_id, detail, since)
    values (${id}, ${entry.ownerId}, ${entry.resellerStoreId}, ${entry.syncJobId}, ${entry.type}, 'open',
      ${entry.subjectId ?? entry.syncJobId}, ${entry.detail}, ${entry.since ?? new Date()})
    on conflict ${ONE_PER_JOB_AND_TYPE} do nothing
    returning id`.execute(trx);
  return rows[0]?.id ?? null;
}

/** Resolves the job's open entries of a type (of one subject when given), in the caller's transaction; returns how many. */
export async function resolveDivergences(trx: Trx | Db, syncJobId: string, type: DivergenceType, subjectId?: string): Promise<number> {
  let update = trx
    .updateTable('divergences')
    .set({ status: 'resolved', resolved_at: sql<Date>`now()` })
    .where('sync_job_id', '=', syncJobId)
    .where('type', '=', type)
    .where('status', '=', 'open');
  if (subjectId !== undefined) update = update.where('subject_id', '=', subjectId);
  const result = await update.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** A `div_` id made by the database, sorting by time like newId's (its first 48 bits are the millisecond). */
export const SQL_DIVERGENCE_ID = `'div_' || lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::bigint), 12, '0') || substr(replace(gen_random_uuid()::text, '-', ''), 13, 20)`;

/**
 * The two steps the attempt transition statement (src/attempts/repository.ts) adds for the to-do
 * list, so an entry is written in the very statement of the death it reports: a row of `table`
 * moved to `dead` raises job_dead / fulfillment_dead (its error as the detail), and a row moved to
 * `completed` (a retried one) resolves its open entry. They read the statement's `written` (id,
 * owner_id, reseller_store_id) and `v` (id, status, error_message, updated_at) steps.
 */
export function transitionDivergences(table: 'sync_jobs' | 'fulfillments'): { raised: RawBuilder<{ id: string }>; resolved: RawBuilder<{ id: string }> } {
  const type = table === 'sync_jobs' ? 'job_dead' : 'fulfillment_dead';
  const jobId = table === 'sync_jobs' ? sql`w.id` : sql`(select f.sync_job_id from fulfillments f where f.id = w.id)`;
  return {
    raised: sql<{ id: string }>`(
      insert into divergences (id, owner_id, reseller_store_id, sync_job_id, type, status, subject_id, detail, since)
      select ${sql.raw(SQL_DIVERGENCE_ID)}, w.owner_id, w.reseller_store_id, ${jobId}, ${type}, 'open', w.id, v.error_message, v.updated_at
      from written w join v on v.id = w.id
      where v.status = 'dead'
      on conflict ${ONE_PER_JOB_AND_TYPE} do nothing
      returning id)`,
    resolved: sql<{ id: string }>`(
      update divergences d set status = 'resolved', resolved_at = v.updated_at
      from written w join v on v.id = w.id
      where v.status = 'completed' and d.subject_id = w.id and d.type = ${type} and d.status = 'open'
      returning d.id)`,
  };
}

/** Every statement the to-do list's API and metrics make. */
export class DivergenceRepository {
  constructor(private readonly orm: Orm) {}

  private get db(): Db {
    return sqlOf(this.orm);
  }

  /** The store's open entries, newest first, paged on the id like every list. */
  async listOpen(resellerStoreId: string, page: PageQuery): Promise<Page<DivergenceRow>> {
    if (page.starting_after !== undefined && page.ending_before !== undefined) {
      throw validationFailed('ending_before', 'Use either starting_after or ending_before, not both.');
    }
    const backwards = page.ending_before !== undefined;
    let query = this.db.selectFrom('divergences').selectAll().where('reseller_store_id', '=', resellerStoreId).where('status', '=', 'open');
    if (backwards) query = query.where('id', '>', page.ending_before!);
    else if (page.starting_after !== undefined) query = query.where('id', '<', page.starting_after);
    const rows = await query.orderBy('id', backwards ? 'asc' : 'desc').limit(page.limit + 1).execute();
    const data = rows.slice(0, page.limit).map(toRow);
    return { data: backwards ? data.reverse() : data, has_more: rows.length > page.limit };
  }

  async find(resellerStoreId: string, id: string): Promise<DivergenceRow | null> {
    const row = await this.db.selectFrom('divergences').selectAll().where('id', '=', id).where('reseller_store_id', '=', resellerStoreId).executeTakeFirst();
    return row ? toRow(row) : null;
  }

  /** Dismisses an open entry (a dismissed or resolved one is answered as it is); null when the store has no such entry. */
  async dismiss(resellerStoreId: string, id: string): Promise<DivergenceRow | null> {
    await this.db
      .updateTable('divergences')
      .set({ status: 'dismissed', dismissed_at: sql<Date>`now()` })
      .where('id', '=', id)
      .where('reseller_store_id', '=', resellerStoreId)
      .where('status', '=', 'open')
      .execute();
    return this.find(resellerStoreId, id);
  }

  /** Open entries of a store by type (every type present, 0 when none): the stats' `attention`. */
  async attention(resellerStoreId: string): Promise<Record<DivergenceType, number>> {
    const rows = await this.db
      .selectFrom('divergences')
      .select(['type', sql<string>`count(*)`.as('count')])
      .where('reseller_store_id', '=', resellerStoreId)
      .where('status', '=', 'open')
      .groupBy('type')
      .execute();
    const counts = Object.fromEntries(DIVERGENCE_TYPES.map((type) => [type, 0])) as Record<DivergenceType, number>;
    for (const row of rows) counts[row.type as DivergenceType] = Number(row.count);
    return counts;
  }

  /** Open entries of every store by type, and the time the oldest open one was raised (metrics). */
  async openSummary(): Promise<{ byType: Record<DivergenceType, number>; oldestSince: Date | null }> {
    const rows = await this.db
      .selectFrom('divergences')
      .select(['type', sql<string>`count(*)`.as('count'), sql<Date>`min(since)`.as('oldest')])
      .where('status', '=', 'open')
      .groupBy('type')
      .execute();
    const byType = Object.fromEntries(DIVERGENCE_TYPES.map((type) => [type, 0])) as Record<DivergenceType, number>;
    let oldestSince: Date | null = null;
    for (const row of rows) {
      byType[row.type as DivergenceType] = Number(row.count);
      const oldest = new Date(row.oldest);
      if (oldestSince === null || oldest < oldestSince) oldestSince = oldest;
    }
    return { byType, oldestSince };
  }
}

function toRow(row: {
  id: string;
  owner_id: string;
  reseller_store_id: string;
  sync_job_id: string;
  type: string;
  status: string;
  subject_id: string;
  detail: string | null;
  since: Date | string;
  resolved_at: Date | string | null;
  dismissed_at: Date | string | null;
}): DivergenceRow {
  return {
    id: row.id,
    ownerId: row.owner_id,
    resellerStoreId: row.reseller_store_id,
    syncJobId: row.sync_job_id,
    type: row.type as DivergenceType,
    status: row.status as DivergenceStatus,
    subjectId: row.subject_id,
    detail: row.detail,
    since: new Date(row.since),
    resolvedAt: row.resolved_at === null ? null : new Date(row.resolved_at),
    dismissedAt: row.dismissed_at === null ? null : new Date(row.dismissed_at),
  };
}
