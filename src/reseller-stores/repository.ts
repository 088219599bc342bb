import { LockMode } from '@mikro-orm/postgresql';
import { sql } from 'kysely';
import { recordAudit, type AuditRecord } from '../audit-log/repository.ts';
import { flushUnique } from '../db/errors.ts';
import type { Orm } from '../db/orm.ts';
import type { Database } from '../db/schema.ts';
import { sqlOf, transactionOf, type Db, type Trx } from '../db/sql.ts';
import type { AppError } from '../shared/errors.ts';
import { findPage } from '../db/paging.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import { ResellerStore } from './entity.ts';
import { FULFILLMENT_STATUSES, SYNC_JOB_STATUSES } from '../../contract/enums.ts';

export type StatusCounts<S extends string> = Record<S, number>;

/** A reseller store at a glance (GET /v1/reseller_stores/{id}/stats). */
export interface StoreStats {
  syncJobs: StatusCounts<(typeof SYNC_JOB_STATUSES)[number]>;
  fulfillments: StatusCounts<(typeof FULFILLMENT_STATUSES)[number]>;
  /** How long the longest-waiting pending job has been pending; null when none is. */
  oldestPendingSeconds: number | null;
  /** When the store's newest sync job was created: the last order routed. */
  lastOrderAt: Date | null;
  lastReconciledAt: Date | null;
}

/**
 * When the store's last successful reconciliation (src/reconciliation/) finished: the newest
 * succeeded run by start, read backwards on the runs' (reseller_store_id, started_at) index.
 */
const LAST_RECONCILED_AT = sql<string | null>`(
  select finished_at from reconciliation_runs
  where reseller_store_id = s.id and status = 'succeeded'
  order by started_at desc limit 1)`;

interface StatsRow {
  counts: { kind: string; status: string; count: number }[] | null;
  oldest_pending_seconds: number | null;
  /** Timestamps come back as text: the ORM's connection leaves values unparsed. */
  last_order_at: string | null;
  last_reconciled_at: string | null;
}

const dateOrNull = (value: string | null): Date | null => (value === null ? null : new Date(value));

/**
 * One statement, whatever the number of jobs: the counts come from `store_status_counts` (kept by
 * triggers, a few dozen rows per store), the oldest pending job from a partial index of pending
 * jobs, the newest job from the (reseller_store_id, id) index, the last reconciliation from the
 * runs' index. Ages are measured on the database's clock.
 */
export async function readStoreStats(db: Db, resellerStoreId: string): Promise<StoreStats> {
  const { rows } = await sql<StatsRow>`
    select
      (select jsonb_agg(jsonb_build_object('kind', kind, 'status', status, 'count', total))
         from (select kind, status, sum(count)::int as total from store_status_counts
               where reseller_store_id = s.id group by kind, status) as c) as counts,
      (select floor(extract(epoch from now() - min(updated_at)))::int from sync_jobs
         where reseller_store_id = s.id and status = 'pending') as oldest_pending_seconds,
      (select created_at from sync_jobs where reseller_store_id = s.id order by id desc limit 1) as last_order_at,
      ${LAST_RECONCILED_AT} as last_reconciled_at
    from (select ${resellerStoreId}::text as id) as s
  `.execute(db);
  const row = rows[0]!;
  const countsOf = <S extends string>(kind: string, statuses: readonly S[]): StatusCounts<S> => {
    const counts = Object.fromEntries(statuses.map((status) => [status, 0])) as StatusCounts<S>;
    for (const entry of row.counts ?? []) {
      if (entry.kind === kind && entry.status in counts) counts[entry.status as S] = entry.count;
    }
    return counts;
  };
  return {
    syncJobs: countsOf('sync_job', SYNC_JOB_STATUSES),
    fulfillments: countsOf('fulfillment', FULFILLMENT_STATUSES),
    // A clock step can make a fresh job look younger than now.
    oldestPendingSeconds: row.oldest_pending_seconds === null ? null : Math.max(0, row.oldest_pending_seconds),
    lastOrderAt: dateOrNull(row.last_order_at),
    lastReconciledAt: dateOrNull(row.last_reconciled_at),
  };
}

/** A table of runs over reseller stores (reconciliation's, the divergence watch's): each names its store, its start and whether it is running. */
export type StoreRunsTable = {
  [T in keyof Database]: Database[T] extends { reseller_store_id: string; status: string; started_at: unknown } ? T : never;
}[keyof Database];

/**
 * The active stores due a run of `runs`: none running, and none started within `intervalMs` (a new
 * store's first run comes one interval after its creation); at most `limit`, by id. In the caller's
 * transaction, whose statement starts their runs.
 */
export async function storesDueIn(trx: Trx, runs: StoreRunsTable, intervalMs: number, limit: number): Promise<{ id: string; ownerId: string }[]> {
  const due = await trx
    .selectFrom('reseller_stores as s')
    .select(['s.id', 's.owner_id'])
    .where('s.deleted_at', 'is', null)
    .where(
      sql<boolean>`coalesce((select max(r.started_at) from ${sql.table(runs)} as r where r.reseller_store_id = s.id), s.created_at)
        <= now() - ${intervalMs} * interval '1 millisecond'`,
    )
    .where(sql<boolean>`not exists (select 1 from ${sql.table(runs)} as r where r.reseller_store_id = s.id and r.status = 'running')`)
    .orderBy('s.id')
    .limit(limit)
    .execute();
  return due.map((row) => ({ id: row.id, ownerId: row.owner_id }));
}

/** Statements on reseller_stores, each change with its audit entry in its unit of work. */
export class ResellerStoreRepository {
  constructor(private readonly orm: Orm) {}

  /** Inserts the store with its audit entry; a shop domain another active store uses is `duplicate()`, thrown. */
  async insert(store: ResellerStore, audit: (store: ResellerStore) => AuditRecord, duplicate: () => AppError): Promise<ResellerStore> {
    const em = this.orm.em;
    const created = em.create(ResellerStore, store);
    recordAudit(em, audit(created));
    await flushUnique(em, duplicate);
    return created;
  }

  list(ownerId: string, page: PageQuery): Promise<Page<ResellerStore>> {
    return findPage(this.orm.em, ResellerStore, { ownerId, deletedAt: null }, page);
  }

  /** The ids of the user's stores on `platform`, deleted ones included (their sync jobs are still listed). */
  async idsOnPlatform(ownerId: string, platform: ResellerStore['platform']): Promise<string[]> {
    const stores = await this.orm.em.fork().find(ResellerStore, { ownerId, platform }, { fields: ['id'] });
    return stores.map((store) => store.id);
  }

  /** The user's store, deleted ones included. */
  findOwned(ownerId: string, id: string): Promise<ResellerStore | null> {
    return this.orm.em.findOne(ResellerStore, { id, ownerId });
  }

  /** A store by id, deleted ones included (outside a request: a fork of its own). */
  findById(id: string): Promise<ResellerStore | null> {
    return this.orm.em.fork().findOne(ResellerStore, { id });
  }

  /** The active store with this shop domain (outside a request: a fork of its own). */
  findActiveByDomain(shopDomain: string): Promise<ResellerStore | null> {
    return this.orm.em.fork().findOne(ResellerStore, { shopDomain, deletedAt: null });
  }

  /** The active stores among these ids (outside a request: a fork of its own). */
  /** The store unless deleted (the divergence watch's port `WatchedStores`). */
  findActive(id: string): Promise<ResellerStore | null> {
    return this.orm.em.fork().findOne(ResellerStore, { id, deletedAt: null });
  }

  findActiveByIds(ids: string[]): Promise<ResellerStore[]> {
    return this.orm.em.fork().find(ResellerStore, { id: { $in: ids }, deletedAt: null });
  }

  stats(resellerStoreId: string): Promise<StoreStats> {
    return readStoreStats(sqlOf(this.orm), resellerStoreId);
  }

  /** Writes the changes made to a store read through this repository, with their audit entry. */
  async update(store: ResellerStore, audit: AuditRecord): Promise<void> {
    const em = this.orm.em;
    recordAudit(em, audit);
    await em.flush();
  }

  /**
   * Soft-deletes the user's active store, with its audit entry and what `alsoIn` writes in the same
   * transaction (its source stores' deletion); false when there is no such active store. The row is read FOR UPDATE among the active ones, so of
   * concurrent deletes exactly one finds it; the others wait for it and find it deleted.
   */
  softDelete(
    ownerId: string,
    id: string,
    audit: (store: ResellerStore) => AuditRecord,
    alsoIn: (trx: Trx, store: ResellerStore, at: Date) => Promise<void>,
  ): Promise<boolean> {
    return this.orm.em.transactional(async (em) => {
      const store = await em.findOne(ResellerStore, { id, ownerId, deletedAt: null }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (!store) return false;
      const now = new Date();
      store.deletedAt = now;
      await alsoIn(transactionOf(em), store, now);
      recordAudit(em, audit(store));
      return true;
    });
  }
}
