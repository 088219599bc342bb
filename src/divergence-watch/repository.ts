/**
 * Every statement of the divergence watch: its passes and watermarks (watch_passes,
 * watch_watermarks, `WatchRepository`), the rows it compares, and the reseller's to-do list
 * (`divergences`, `DivergenceRepository`). Entries are raised and resolved in the transaction of the
 * change that causes them: `raiseDivergence` / `resolveDivergences` take the caller's transaction,
 * and deaths and completions of retried work are written by their transition statement
 * (`settledSteps`).
 */
import { sql, type RawBuilder, type UpdateQueryBuilder, type UpdateResult } from 'kysely';
import type { SettledStep } from '../attempts/kind.ts';
import { insertAudit, type AuditRecord } from '../audit-log/repository.ts';
import type { Orm } from '../db/orm.ts';
import type { StoresDue } from './ports.ts';
import type { Database } from '../db/schema.ts';
import { sqlOf, type Db, type Trx } from '../db/sql.ts';
import { abandonExpiredRuns, handBackRun, holdLocks, leaseEnd, renewRun, takeRun, takeTurn } from '../db/locks.ts';
import { newMessageId, type Queue } from '../queue/queue.ts';
import { SyncJob } from '../sync-jobs/entity.ts';
import { placedJobLockKey } from '../sync-jobs/placed-lock.ts';
import { newId } from '../shared/ids.ts';
import { validationFailed } from '../shared/errors.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import { DIVERGENCE_TYPES, type DivergenceStatus, type DivergenceType, type WatchPass, type WatchPassStatus } from './entity.ts';

/** A pass as a worker holds it; `take` identifies this hold: only it may renew or finish the pass. */
export interface TakenPass {
  id: string;
  resellerStoreId: string;
  trigger: WatchPass['trigger'];
  take: number;
  /** What the pass's earlier holds did (a handed-back pass goes on counting). */
  ordersSeen: number;
  repairs: number;
  platformReads: number;
}

export interface PassOutcome {
  status: Exclude<WatchPassStatus, 'running'>;
  ordersSeen: number;
  repairs: number;
  platformReads: number;
  error: string | null;
}

const SCHEDULER_LOCK = 'divergence-watch.scheduler';

type PassUpdate = UpdateQueryBuilder<Database, 'watch_passes', 'watch_passes', UpdateResult>;


export class WatchRepository {
  constructor(
    private readonly orm: Orm,
    private readonly queue: Queue,
    private readonly storesDue: StoresDue,
  ) {}

  private get db(): Db {
    return sqlOf(this.orm);
  }

  /** Starts a pass over one store now (with its queue message), unless one is running: null. */
  start(store: { id: string; ownerId: string }, trigger: WatchPass['trigger'], queuedLeaseMs: number, audit?: (passId: string) => AuditRecord): Promise<string | null> {
    return this.db.transaction().execute(async (trx) => {
      await abandonExpiredRuns(trx, 'watch_passes', store.id);
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
      await abandonExpiredRuns(trx, 'watch_passes', null);
      const due = await this.storesDue(trx, 'watch_passes', intervalMs, limit);
      return this.insertPasses(trx, due, 'scheduled', queuedLeaseMs);
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
          lease_expires_at: leaseEnd(queuedLeaseMs),
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
    const row = await takeRun<{ reseller_store_id: string; trigger: string; orders_seen: number; repairs: number; platform_reads: number }>(this.db, 'watch_passes', id, leaseMs, [
      'reseller_store_id',
      'trigger',
      'orders_seen',
      'repairs',
      'platform_reads',
    ]);
    if (!row) return null;
    return {
      id,
      resellerStoreId: row.reseller_store_id,
      trigger: row.trigger as TakenPass['trigger'],
      take: row.takes,
      ordersSeen: row.orders_seen,
      repairs: row.repairs,
      platformReads: row.platform_reads,
    };
  }

  /**
   * Gives this hold of the pass back, still `running`, with its counts, and a new queue message that
   * brings it to the next worker at once (this process is stopping); the stores' watermarks already
   * moved over what it compared. Unless a worker takes it within `queuedLeaseMs` it is failed as
   * abandoned, as a requested pass is. False when the pass was no longer this process's.
   */
  handBack(pass: TakenPass, counts: { ordersSeen: number; repairs: number; platformReads: number }, queuedLeaseMs: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const kept = await this.heldBy(
        pass,
        trx.updateTable('watch_passes').set({ orders_seen: counts.ordersSeen, repairs: counts.repairs, platform_reads: counts.platformReads }),
      ).executeTakeFirst();
      if (kept.numUpdatedRows !== 1n || !(await handBackRun(trx, 'watch_passes', pass, queuedLeaseMs))) return false;
      await this.queue.insertIn(trx, 'divergenceWatch', [{ id: newMessageId(), message: { watchPassId: pass.id } }]);
      return true;
    });
  }

  /** Fails every running pass whose lease expired (its process was lost); returns how many. */
  async abandonExpired(): Promise<number> {
    return this.db.transaction().execute((trx) => abandonExpiredRuns(trx, 'watch_passes', null));
  }

  renew(pass: TakenPass, leaseMs: number): Promise<boolean> {
    return renewRun(this.db, 'watch_passes', pass, leaseMs);
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

  /**
   * Raises `stale` for the store's placed jobs with no tracking since `staleAfterMs` after their
   * placement (at most `limit` per call), once per job: never for a job whose supplier order was
   * cancelled, nor again after a dismissal. `report` writes the audit entries and events of the
   * jobs raised, in the same transaction. Returns how many were raised.
   *
   * The jobs found are decided again once their placed-job locks are held: tracking or a supplier
   * cancellation being recorded for one of them right now (under that lock, src/sync-jobs/placed-lock.ts)
   * is committed by then, and the second statement sees it; neither can come in between.
   */
  raiseStale(resellerStoreId: string, staleAfterMs: number, limit: number, report: (trx: Trx, jobs: SyncJob[]) => Promise<void>): Promise<number> {
    return this.transaction(async (trx) => {
      const { rows: found } = await sql<{ id: string }>`
        select j.id from sync_jobs j where ${staleJobs(resellerStoreId, staleAfterMs)} order by j.id limit ${limit}`.execute(trx);
      if (found.length === 0) return 0;
      const ids = found.map((row) => row.id);
      await holdLocks(trx, ids.map(placedJobLockKey));
      const { rows } = await sql<{ sync_job_id: string }>`
        insert into divergences (id, owner_id, reseller_store_id, sync_job_id, type, status, subject_id, detail, since)
        select ${sql.raw(SQL_DIVERGENCE_ID)}, j.owner_id, j.reseller_store_id, j.id, 'stale', 'open', j.id,
          case when exists (select 1 from cancellations c where c.sync_job_id = j.id and c.scope = 'order' and c.created_at <= j.completed_at)
            -- Ended unplaced by its whole-order cancellation, its order found since: when it was placed is not known.
            then 'Ended unplaced ' || to_char(j.completed_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC when its order was cancelled; its supplier order ' || j.source_order_id || ' was found since; no tracking since.'
            else 'Placed ' || to_char(j.completed_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC on the supplier (order ' || j.source_order_id || '); no tracking since.'
          end, now()
        from sync_jobs j
        where j.id = any(${ids}::text[]) and ${staleJobs(resellerStoreId, staleAfterMs)}
        order by j.id
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

/**
 * The store's placed jobs (`j`) due a `stale` entry: no tracking `staleAfterMs` after their placement, their supplier order not
 * cancelled nor being cancelled (no whole-order cancellation unfinished or dead; the supplier's own cancellation of some lines
 * only leaves the rest to ship), none raised before (once per job, whatever became of it).
 */
function staleJobs(resellerStoreId: string, staleAfterMs: number) {
  return sql`j.reseller_store_id = ${resellerStoreId} and j.status = 'completed' and j.source_order_id is not null
    and j.completed_at < now() - ${staleAfterMs} * interval '1 millisecond'
    -- A shipment recorded skipped (no tracking number for a storefront that needs one) never reached the customer: not tracking.
    and not exists (select 1 from fulfillments f where f.sync_job_id = j.id and f.status <> 'skipped')
    -- A supplier order that is cancelled (by the supplier, or at the service's request) ships nothing; one whose whole-order
    -- cancellation is still being made, or dead (cancellation_dead on the to-do list), waits for it, not for tracking.
    -- The supplier's own cancellation of some lines only (supplier_cancelled_lines) leaves the rest to ship.
    and (j.supplier_cancelled_at is null or j.supplier_cancelled_lines is not null)
    and not exists (select 1 from cancellations c where c.sync_job_id = j.id
      and (((c.scope = 'order' or c.closes_order) and c.outcome = 'cancelled') or (c.scope = 'order' and c.status <> 'completed')))
    -- Stale once per job (order-changes.md), also after its entry was resolved: by a cancellation that a shipment with no
    -- tracking number then made too_late, say (that shipment is on the to-do list as too_late).
    and not exists (select 1 from divergences d where d.sync_job_id = j.id
      and (d.type = 'stale' or (d.type = 'supplier_cancelled' and d.status in ('open', 'dismissed') and j.supplier_cancelled_lines is null)))`;
}

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

/** An entry as its list shows it: with the storefront order of its job. */
export interface ListedDivergence extends DivergenceRow {
  externalOrderId: string;
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

/** Resolves the open entries of these types of these jobs, in one statement in the caller's transaction; returns how many. */
export async function resolveDivergencesOfJobs(trx: Trx | Db, syncJobIds: string[], types: DivergenceType[]): Promise<number> {
  if (syncJobIds.length === 0 || types.length === 0) return 0;
  const result = await trx
    .updateTable('divergences')
    .set({ status: 'resolved', resolved_at: sql<Date>`now()` })
    .where('sync_job_id', 'in', syncJobIds)
    .where('type', 'in', types)
    .where('status', '=', 'open')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Replaces the detail of the job's open entry of a type (what it is about now), in the caller's transaction; returns how many. */
export async function describeDivergence(trx: Trx | Db, syncJobId: string, type: DivergenceType, detail: string | null): Promise<number> {
  const result = await trx
    .updateTable('divergences')
    .set({ detail })
    .where('sync_job_id', '=', syncJobId)
    .where('type', '=', type)
    .where('status', '=', 'open')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** A `div_` id made by the database, sorting by time like newId's (its first 48 bits are the millisecond). */
export const SQL_DIVERGENCE_ID = `'div_' || lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::bigint), 12, '0') || substr(replace(gen_random_uuid()::text, '-', ''), 13, 20)`;

/**
 * The to-do list's steps in the transition statement of a kind of retried work (its `onSettled`,
 * handed to the kind by the composition root, src/workers/kinds.ts), so an entry is written in the
 * very statement of the death it reports, whoever writes it (a worker, the sweep, a manual retry):
 * a row moved to `dead` raises `type` (its error as the detail), and a row moved to `completed` (a
 * retried one) resolves its open entry. They read the statement's `settled` rows. `jobOf` names the
 * table whose `sync_job_id` gives the job of a row (`fulfillments`); by default the row is the job.
 * The cancellation kind adds `cancellation_dead` the same way: `settledSteps('cancellation_dead', 'cancellations')`.
 */
export function settledSteps(type: DivergenceType, jobOf?: string): SettledStep[] {
  const jobId = jobOf === undefined ? sql`s.id` : sql`(select x.sync_job_id from ${sql.table(jobOf)} x where x.id = s.id)`;
  return [
    sql`(
      insert into divergences (id, owner_id, reseller_store_id, sync_job_id, type, status, subject_id, detail, since)
      select ${sql.raw(SQL_DIVERGENCE_ID)}, s.owner_id, s.reseller_store_id, ${jobId}, ${type}, 'open', s.id, s.error_message, s.updated_at
      from settled s
      where s.status = 'dead'
      on conflict ${ONE_PER_JOB_AND_TYPE} do nothing
      returning id)`,
    jobOf === undefined ? resolveStep(type) : resolveOrPassOnStep(type, jobOf),
  ];
}

/** A row moved to `completed` resolves the open entry it is the subject of. */
function resolveStep(type: DivergenceType): SettledStep {
  return sql`(
    update divergences d set status = 'resolved', resolved_at = s.updated_at
    from settled s
    where s.status = 'completed' and d.subject_id = s.id and d.type = ${type} and d.status = 'open'
    returning d.id)`;
}

/**
 * `resolveStep` for a table with several rows per job (a job's fulfillments, its cancellations): the
 * job has one open entry of the type, so when its subject completes while another row of the job is
 * still dead (or dies in this statement), the entry passes to that row instead of being resolved.
 * (The statement's snapshot shows the rows it settles as they were, hence `settled` for those.)
 */
function resolveOrPassOnStep(type: DivergenceType, table: string): SettledStep {
  const jobOfRow = (id: RawBuilder<unknown>) => sql`(select y.sync_job_id from ${sql.table(table)} y where y.id = ${id})`;
  return sql`(
    update divergences d set
      status = case when other.id is null then 'resolved' else 'open' end,
      resolved_at = case when other.id is null then s.updated_at end,
      subject_id = coalesce(other.id, d.subject_id),
      detail = case when other.id is null then d.detail else other.error_message end
    from settled s
    left join lateral (
      select dead.id, dead.error_message from (
        select x.id, x.error_message from ${sql.table(table)} x
        where x.sync_job_id = ${jobOfRow(sql`s.id`)} and x.status = 'dead' and x.id not in (select z.id from settled z)
        union all
        select z.id, z.error_message from settled z where z.status = 'dead' and ${jobOfRow(sql`z.id`)} = ${jobOfRow(sql`s.id`)}
      ) dead order by dead.id limit 1
    ) other on true
    where s.status = 'completed' and d.subject_id = s.id and d.type = ${type} and d.status = 'open'
    returning d.id)`;
}

/** The longest `detail` a cancellation's entry grows to as later cancellations of its job add their reasons. */
const MAX_CANCELLATION_DETAIL = 2_000;

/**
 * The cancellation kind's own entries, in its transition statement like `settledSteps`: a
 * cancellation completed `too_late` (the supplier had shipped) or `unsupported` (lines a platform
 * cannot cancel alone) raises an entry of that type: the goods need a return, or the lines need
 * handling by hand, its detail naming the cancellation and its reason (which lines), recorded before
 * the outcome. A job has one open entry of a type, so a later cancellation of the job with the same
 * outcome adds its own to that entry's detail rather than go unlisted (a dismissed entry stays as it
 * is: it is not raised again). A whole-order cancellation completed `cancelled` resolves its job's
 * `stale` entry.
 */
export function cancellationOutcomeSteps(): SettledStep[] {
  const named = sql`coalesce(' ' || x.id || ': ' || x.reason || '.', '')`;
  return [
    sql`(
      update divergences d set detail = left(d.detail || ${named}, ${MAX_CANCELLATION_DETAIL})
      from settled s
      join cancellations x on x.id = s.id
      where s.status = 'completed' and s.result in ('too_late', 'unsupported') and x.reason is not null
        and d.sync_job_id = x.sync_job_id and d.type = s.result and d.status = 'open' and d.subject_id <> x.id
      returning d.id)`,
    sql`(
      insert into divergences (id, owner_id, reseller_store_id, sync_job_id, type, status, subject_id, detail, since)
      select ${sql.raw(SQL_DIVERGENCE_ID)}, s.owner_id, s.reseller_store_id, x.sync_job_id, s.result, 'open', s.id,
        left(case s.result when 'too_late' then 'The supplier had already shipped: the goods need a return.'
          else 'The supplier cannot cancel some lines only: they need handling by hand.' end || ${named}, ${MAX_CANCELLATION_DETAIL}),
        s.updated_at
      from settled s
      join cancellations x on x.id = s.id
      where s.status = 'completed' and s.result in ('too_late', 'unsupported')
      on conflict ${ONE_PER_JOB_AND_TYPE} do nothing
      returning id)`,
    // A supplier order the service had cancelled ships nothing, so its job's `stale` entry is resolved.
    sql`(
      update divergences d set status = 'resolved', resolved_at = s.updated_at
      from settled s
      join cancellations x on x.id = s.id
      where s.status = 'completed' and s.result = 'cancelled' and (x.scope = 'order' or x.closes_order)
        and d.sync_job_id = x.sync_job_id and d.type = 'stale' and d.status = 'open'
      returning d.id)`,
  ];
}

/** Tracking arrived for a job (in the transaction recording it): its `stale` entry is resolved. */
export async function trackingArrived(trx: Trx, syncJobId: string): Promise<void> {
  await resolveDivergences(trx, syncJobId, 'stale');
}

/** Every statement the to-do list's API and metrics make. */
export class DivergenceRepository {
  constructor(private readonly orm: Orm) {}

  private get db(): Db {
    return sqlOf(this.orm);
  }

  /** The store's open entries, newest first, paged on the id like every list. */
  async listOpen(resellerStoreId: string, page: PageQuery): Promise<Page<ListedDivergence>> {
    if (page.starting_after !== undefined && page.ending_before !== undefined) {
      throw validationFailed('ending_before', 'Use either starting_after or ending_before, not both.');
    }
    const backwards = page.ending_before !== undefined;
    let query = this.listed().where('d.reseller_store_id', '=', resellerStoreId).where('d.status', '=', 'open');
    if (backwards) query = query.where('d.id', '>', page.ending_before!);
    else if (page.starting_after !== undefined) query = query.where('d.id', '<', page.starting_after);
    const rows = await query.orderBy('d.id', backwards ? 'asc' : 'desc').limit(page.limit + 1).execute();
    const data = rows.slice(0, page.limit).map(toListed);
    return { data: backwards ? data.reverse() : data, has_more: rows.length > page.limit };
  }

  async find(resellerStoreId: string, id: string): Promise<ListedDivergence | null> {
    const row = await this.listed().where('d.id', '=', id).where('d.reseller_store_id', '=', resellerStoreId).executeTakeFirst();
    return row ? toListed(row) : null;
  }

  /** Entries with their job's storefront order number (jobs are never deleted). */
  private listed() {
    return this.db.selectFrom('divergences as d').innerJoin('sync_jobs as j', 'j.id', 'd.sync_job_id').selectAll('d').select('j.external_order_id');
  }

  /**
   * Dismisses an open entry, with its audit entry (`audit`, of the entry as dismissed) in the same
   * transaction; a dismissed or resolved one is answered as it is, and audited no more. Null when the
   * store has no such entry.
   */
  async dismiss(resellerStoreId: string, id: string, audit: (entry: DivergenceRow) => AuditRecord): Promise<ListedDivergence | null> {
    await this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('divergences')
        .set({ status: 'dismissed', dismissed_at: sql<Date>`now()` })
        .where('id', '=', id)
        .where('reseller_store_id', '=', resellerStoreId)
        .where('status', '=', 'open')
        .returningAll()
        .executeTakeFirst();
      if (row) await insertAudit(trx, [audit(toRow(row))]);
    });
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

function toListed(row: Parameters<typeof toRow>[0] & { external_order_id: string }): ListedDivergence {
  return { ...toRow(row), externalOrderId: row.external_order_id };
}
