/** Every statement of the divergence watch on watch_passes, watch_watermarks and the rows it compares. */
import { sql, type UpdateQueryBuilder, type UpdateResult } from 'kysely';
import { insertAudit, type AuditRecord } from '../audit-log/repository.ts';
import type { Orm } from '../db/orm.ts';
import type { Database } from '../db/schema.ts';
import { sqlOf, type Db, type Trx } from '../db/sql.ts';
import { takeTurn } from '../db/turns.ts';
import { newMessageId, type Queue } from '../queue/queue.ts';
import { ResellerStore } from '../reseller-stores/entity.ts';
import { SourceStore } from '../source-stores/entity.ts';
import { SyncJob } from '../sync-jobs/entity.ts';
import { newId } from '../shared/ids.ts';
import type { WatchPass, WatchPassStatus } from './entity.ts';
import { SQL_DIVERGENCE_ID } from './divergences.ts';

/** A pass as a worker holds it; `take` identifies this hold: only it may renew or finish the pass. */
export interface TakenPass {
  id: string;
  resellerStoreId: string;
  trigger: WatchPass['trigger'];
  take: number;
}

export interface PassOutcome {
  status: Exclude<WatchPassStatus, 'running'>;
  ordersSeen: number;
  repairs: number;
  platformReads: number;
  error: string | null;
}

const ABANDONED = 'Abandoned: the process running it stopped before it finished.';
const SCHEDULER_LOCK = 'divergence-watch.scheduler';

type PassUpdate = UpdateQueryBuilder<Database, 'watch_passes', 'watch_passes', UpdateResult>;

/** `now() + ms`, by the database's clock, which every process shares. */
const fromNow = (ms: number) => sql<Date>`now() + ${ms} * interval '1 millisecond'`;

export class WatchRepository {
  constructor(
    private readonly orm: Orm,
    private readonly queue: Queue,
  ) {}

  private get db(): Db {
    return sqlOf(this.orm);
  }

  /** Starts a pass over one store now (with its queue message), unless one is running: null. */
  start(store: { id: string; ownerId: string }, trigger: WatchPass['trigger'], queuedLeaseMs: number, audit?: (passId: string) => AuditRecord): Promise<string | null> {
    return this.db.transaction().execute(async (trx) => {
      await abandonExpired(trx, store.id);
      const [id] = await this.insertPasses(trx, [store], trigger, queuedLeaseMs);
      if (id === undefined) return null;
      if (audit) await insertAudit(trx, [audit(id)]);
      return id;
    });
  }

  /**
   * Starts a pass for every active reseller store due one (none running, none started within
   * `intervalMs`; a new store's first one interval after its creation). One process at a time.
   */
  startDue(intervalMs: number, queuedLeaseMs: number, limit: number): Promise<string[]> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await takeTurn(trx, SCHEDULER_LOCK))) return [];
      await abandonExpired(trx, null);
      const due = await trx
        .selectFrom('reseller_stores as s')
        .select(['s.id', 's.owner_id'])
        .where('s.deleted_at', 'is', null)
        .where(
          (eb) =>
            eb.fn.coalesce(
              eb.selectFrom('watch_passes as p').select((inner) => inner.fn.max('p.started_at').as('latest')).whereRef('p.reseller_store_id', '=', 's.id'),
              eb.ref('s.created_at'),
            ),
          '<=',
          sql<Date>`now() - ${intervalMs} * interval '1 millisecond'`,
        )
        .where(({ not, exists, selectFrom }) =>
          not(exists(selectFrom('watch_passes as p').select('p.id').whereRef('p.reseller_store_id', '=', 's.id').where('p.status', '=', 'running'))),
        )
        .orderBy('s.id')
        .limit(limit)
        .execute();
      return this.insertPasses(trx, due.map((row) => ({ id: row.id, ownerId: row.owner_id })), 'scheduled', queuedLeaseMs);
    });
  }

  private async insertPasses(trx: Trx, stores: { id: string; ownerId: string }[], trigger: WatchPass['trigger'], queuedLeaseMs: number): Promise<string[]> {
    if (stores.length === 0) return [];
    const rows = await trx
      .insertInto('watch_passes')
      .values(
        stores.map((store) => ({
          id: newId('watchPass'),
          owner_id: store.ownerId,
          reseller_store_id: store.id,
          trigger,
          status: 'running',
          orders_seen: 0,
          repairs: 0,
          platform_reads: 0,
          error: null,
          takes: 0,
          lease_expires_at: fromNow(queuedLeaseMs),
          started_at: sql<Date>`clock_timestamp()`,
          finished_at: null,
        })),
      )
      // The partial unique index allows one running pass per store, across every process.
      .onConflict((oc) => oc.column('reseller_store_id').where('status', '=', 'running').doNothing())
      .returning('id')
      .execute();
    const ids = rows.map((row) => row.id);
    await this.queue.insertIn(trx, 'divergenceWatch', ids.map((id) => ({ id: newMessageId(), message: { watchPassId: id } })));
    return ids;
  }

  /** Takes a pass nobody took yet, or one whose process was lost (its lease expired); null otherwise. */
  async take(id: string, leaseMs: number): Promise<TakenPass | null> {
    const row = await this.db
      .updateTable('watch_passes')
      .set((eb) => ({ takes: eb('takes', '+', 1), lease_expires_at: fromNow(leaseMs) }))
      .where('id', '=', id)
      .where('status', '=', 'running')
      .where((eb) => eb.or([eb('takes', '=', 0), eb('lease_expires_at', '<', sql<Date>`now()`)]))
      .returning(['reseller_store_id', 'trigger', 'takes'])
      .executeTakeFirst();
    return row ? { id, resellerStoreId: row.reseller_store_id, trigger: row.trigger as TakenPass['trigger'], take: row.takes } : null;
  }

  async renew(pass: TakenPass, leaseMs: number): Promise<boolean> {
    const result = await this.heldBy(pass, this.db.updateTable('watch_passes').set({ lease_expires_at: fromNow(leaseMs) })).executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  async finish(pass: TakenPass, outcome: PassOutcome): Promise<boolean> {
    const result = await this.heldBy(
      pass,
      this.db.updateTable('watch_passes').set({
        status: outcome.status,
        finished_at: sql<Date>`now()`,
        orders_seen: outcome.ordersSeen,
        repairs: outcome.repairs,
        platform_reads: outcome.platformReads,
        error: outcome.error,
      }),
    ).executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  private heldBy(pass: TakenPass, update: PassUpdate): PassUpdate {
    return update.where('id', '=', pass.id).where('status', '=', 'running').where('takes', '=', pass.take);
  }

  async findPass(id: string): Promise<{ status: string; ordersSeen: number; repairs: number; platformReads: number; error: string | null; startedAt: Date; finishedAt: Date | null } | null> {
    const row = await this.db.selectFrom('watch_passes').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return null;
    return {
      status: row.status,
      ordersSeen: row.orders_seen,
      repairs: row.repairs,
      platformReads: row.platform_reads,
      error: row.error,
      startedAt: new Date(row.started_at),
      finishedAt: row.finished_at === null ? null : new Date(row.finished_at),
    };
  }

  async watermarkOf(storeId: string): Promise<Date | null> {
    const row = await this.db.selectFrom('watch_watermarks').select('watermark').where('store_id', '=', storeId).executeTakeFirst();
    return row ? new Date(row.watermark) : null;
  }

  /** Moves a store's watermark forward to `watermark` (never back). */
  async advanceWatermark(storeId: string, watermark: Date): Promise<void> {
    await this.db
      .insertInto('watch_watermarks')
      .values({ store_id: storeId, watermark, updated_at: sql<Date>`now()` })
      .onConflict((oc) =>
        oc.column('store_id').doUpdateSet({ watermark: sql<Date>`greatest(watch_watermarks.watermark, excluded.watermark)`, updated_at: sql<Date>`now()` }),
      )
      .execute();
  }

  /** The reseller store, unless deleted, and its active suppliers. */
  async storesOf(resellerStoreId: string): Promise<{ reseller: ResellerStore; suppliers: SourceStore[] } | null> {
    const em = this.orm.em.fork();
    const reseller = await em.findOne(ResellerStore, { id: resellerStoreId, deletedAt: null });
    if (!reseller) return null;
    const suppliers = await em.find(SourceStore, { resellerStoreId, deletedAt: null }, { orderBy: { id: 'asc' } });
    return { reseller, suppliers };
  }

  /** The jobs that placed these orders on this supplier store. */
  async jobsBySourceOrder(sourceStoreId: string, sourceOrderIds: string[]): Promise<Map<string, SyncJob>> {
    if (sourceOrderIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('sync_jobs')
      .selectAll()
      .where('source_store_id', '=', sourceStoreId)
      .where('source_order_id', '=', sql<string>`any(${sourceOrderIds}::text[])`)
      .execute();
    const em = this.orm.em.fork();
    return new Map(rows.map((row) => [row.source_order_id!, em.map(SyncJob, row as Record<string, unknown>)]));
  }

  /** The identities (dedupe keys) of the fulfillments these jobs already have. */
  async fulfillmentKeysOf(syncJobIds: string[]): Promise<Set<string>> {
    if (syncJobIds.length === 0) return new Set();
    const rows = await this.db
      .selectFrom('fulfillments')
      .select(['sync_job_id', 'dedupe_key'])
      .where('sync_job_id', '=', sql<string>`any(${syncJobIds}::text[])`)
      .execute();
    return new Set(rows.map((row) => `${row.sync_job_id}:${row.dedupe_key}`));
  }

  /** Whether the owner's audit log already has this action on this resource. */
  async audited(trx: Trx, ownerId: string, action: string, resourceId: string): Promise<boolean> {
    const row = await trx
      .selectFrom('audit_entries')
      .select('id')
      .where('owner_id', '=', ownerId)
      .where('action', '=', action)
      .where('resource_id', '=', resourceId)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Raises `stale` for the store's placed jobs with no tracking since `staleAfterMs` after their
   * placement (at most `limit` per call), once per job: never for a job whose supplier order was
   * cancelled, nor again after a dismissal. `report` writes the audit entries and events of the
   * jobs raised, in the same transaction. Returns how many were raised.
   */
  raiseStale(resellerStoreId: string, staleAfterMs: number, limit: number, report: (trx: Trx, jobs: SyncJob[]) => Promise<void>): Promise<number> {
    return this.transaction(async (trx) => {
      const { rows } = await sql<{ sync_job_id: string }>`
        insert into divergences (id, owner_id, reseller_store_id, sync_job_id, type, status, subject_id, detail, since)
        select ${sql.raw(SQL_DIVERGENCE_ID)}, j.owner_id, j.reseller_store_id, j.id, 'stale', 'open', j.id,
          'Placed ' || to_char(j.completed_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC on the supplier (order ' || j.source_order_id || '); no tracking since.', now()
        from sync_jobs j
        where j.reseller_store_id = ${resellerStoreId} and j.status = 'completed' and j.source_order_id is not null
          and j.completed_at < now() - ${staleAfterMs} * interval '1 millisecond'
          and not exists (select 1 from fulfillments f where f.sync_job_id = j.id)
          and not exists (select 1 from divergences d where d.sync_job_id = j.id and d.type in ('stale', 'supplier_cancelled') and d.status in ('open', 'dismissed'))
        order by j.id
        limit ${limit}
        on conflict (sync_job_id, type) where status in ('open', 'dismissed') do nothing
        returning sync_job_id`.execute(trx);
      if (rows.length === 0) return 0;
      const jobs = await trx.selectFrom('sync_jobs').selectAll().where('id', '=', sql<string>`any(${rows.map((row) => row.sync_job_id)}::text[])`).execute();
      const em = this.orm.em.fork();
      await report(trx, jobs.map((row) => em.map(SyncJob, row as Record<string, unknown>)));
      return rows.length;
    });
  }

  transaction<T>(work: (trx: Trx) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }
}

/** Fails running passes whose lease expired (of one store, or all), so they block no new one. */
async function abandonExpired(trx: Trx, resellerStoreId: string | null): Promise<void> {
  let update = trx
    .updateTable('watch_passes')
    .set({ status: 'failed', finished_at: sql<Date>`now()`, error: ABANDONED })
    .where('status', '=', 'running')
    .where('lease_expires_at', '<', sql<Date>`now()`);
  if (resellerStoreId !== null) update = update.where('reseller_store_id', '=', resellerStoreId);
  await update.execute();
}
