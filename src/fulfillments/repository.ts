import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { AttemptTarget } from '../attempts/kind.ts';
import { writeAttemptTransitions, type AttemptWrite } from '../attempts/repository.ts';
import { holdLock } from '../db/locks.ts';
import type { Orm } from '../db/orm.ts';
import type { Database } from '../db/schema.ts';
import { sqlOf, type Db, type Trx } from '../db/sql.ts';
import type { Tracking } from '../orders/types.ts';
import { placedJobLockKey } from '../sync-jobs/placed-lock.ts';
import { Fulfillment } from './entity.ts';
import type { FulfillmentKeys } from './identity.ts';

/** A held fulfillment (held.entity.ts) to keep, or as read back with the job that now owns its order. */
export interface HeldRow {
  id: string;
  ownerId: string;
  resellerStoreId: string;
  sourceStoreId: string;
  sourceOrderId: string;
  keys: FulfillmentKeys;
  tracking: Tracking;
  receivedAt: Date;
  /** The divergence-watch pass that found it; null when a webhook brought it. */
  watchPassId: string | null;
}

/** The table a manual transition writes (one object, so its statement is built once: `writeAttemptTransitions`). */
const FULFILLMENT_TARGET: AttemptTarget = { name: 'fulfillment', table: 'fulfillments', resultColumn: 'reseller_fulfillment_id' };

/**
 * That no sync job can own the held row a query names `heldAlias` (the sync jobs' `noJobCanOwn`, a
 * port the composition root hands in): the sweep forgets such rows.
 */
export type NoJobCanOwn = (heldAlias: string) => RawBuilder<boolean>;

/** Every statement on fulfillments. */
export class FulfillmentRepository {
  constructor(
    private readonly orm: Orm,
    private readonly noJobCanOwn: NoJobCanOwn,
  ) {}

  private get db(): Db {
    return sqlOf(this.orm);
  }

  async findByIds(ids: string[]): Promise<Fulfillment[]> {
    return this.orm.em.fork().find(Fulfillment, { id: { $in: ids } });
  }

  /** The user's fulfillment of this job, or null (another user's is as missing). */
  findOwned(ownerId: string, syncJobId: string, id: string): Promise<Fulfillment | null> {
    return this.orm.em.fork().findOne(Fulfillment, { id, syncJobId, ownerId });
  }

  /** A job's fulfillments, oldest first. */
  listForJob(syncJobId: string): Promise<Fulfillment[]> {
    return this.orm.em.find(Fulfillment, { syncJobId }, { orderBy: { id: 'asc' } });
  }

  /**
   * The job's fulfillment with either of these keys, read after taking an advisory lock on the job
   * for the rest of the transaction: concurrent deliveries of one fulfillment see each other's insert.
   */
  async lockAndFind(trx: Trx, syncJobId: string, keys: FulfillmentKeys): Promise<Fulfillment | null> {
    await holdLock(trx, placedJobLockKey(syncJobId));
    const row = await trx
      .selectFrom('fulfillments')
      .selectAll()
      .where('sync_job_id', '=', syncJobId)
      .where((eb) => eb.or([eb('dedupe_key', '=', keys.dedupeKey), ...(keys.webhookId ? [eb('webhook_id', '=', keys.webhookId)] : [])]))
      .orderBy('id')
      .executeTakeFirst();
    return row ? this.orm.em.fork().map(Fulfillment, row as Record<string, unknown>) : null;
  }

  /**
   * The tracking numbers the job's records of one platform fulfillment carry (its first record, key
   * `dedupeKey`, and those of numbers added to it later, keys beginning `addedPrefix`), read under
   * the lock `lockAndFind` took.
   */
  async numbersRecordedIn(trx: Trx, syncJobId: string, dedupeKey: string, addedPrefix: string): Promise<Set<string>> {
    const rows = await trx
      .selectFrom('fulfillments')
      .select('tracking')
      .where('sync_job_id', '=', syncJobId)
      .where((eb) => eb.or([eb('dedupe_key', '=', dedupeKey), eb(sql<boolean>`starts_with(dedupe_key, ${addedPrefix})`, '=', true)]))
      .execute();
    return new Set(rows.flatMap((row) => (row.tracking as Tracking).numbers));
  }

  /** Which of these jobs have a fulfillment recorded, as this transaction sees them (src/cancellations/ports.ts `RecordedShipments`). */
  async jobsShippedIn(trx: Trx, syncJobIds: string[]): Promise<Set<string>> {
    const rows = await trx.selectFrom('fulfillments').select('sync_job_id').distinct().where('sync_job_id', '=', sql<string>`any(${syncJobIds}::text[])`).execute();
    return new Set(rows.map((row) => row.sync_job_id));
  }

  async insert(trx: Trx, fulfillment: Fulfillment): Promise<void> {
    await trx
      .insertInto('fulfillments')
      .values({
        id: fulfillment.id,
        owner_id: fulfillment.ownerId,
        reseller_store_id: fulfillment.resellerStoreId,
        sync_job_id: fulfillment.syncJobId,
        dedupe_key: fulfillment.dedupeKey,
        webhook_id: fulfillment.webhookId ?? null,
        status: fulfillment.status,
        attempts: fulfillment.attempts,
        retries_left: fulfillment.retriesLeft,
        tracking: JSON.stringify(fulfillment.tracking),
        reseller_fulfillment_id: fulfillment.resellerFulfillmentId ?? null,
        error_message: fulfillment.errorMessage ?? null,
        completed_at: fulfillment.completedAt ?? null,
        failed_at: fulfillment.failedAt ?? null,
        dead_at: fulfillment.deadAt ?? null,
        queue_message_id: fulfillment.queueMessageId ?? null,
        version: fulfillment.version,
        created_at: fulfillment.createdAt,
        updated_at: fulfillment.updatedAt,
      })
      .execute();
  }

  /** Version-checked writes of fulfillments' lifecycle columns, with their audit entries (see writeAttemptTransitions). */
  writeTransitions(db: Db | Trx, writes: AttemptWrite<Fulfillment>[]): Promise<boolean[]> {
    return writeAttemptTransitions(db, FULFILLMENT_TARGET, writes);
  }

  /**
   * Keeps fulfillments of orders no job has recorded; one already held (same order and identity) is
   * kept as it was, unless this one shows tracking numbers it lacks (a platform fulfillment whose
   * carrier's number was added since): then it is kept with this tracking, which its claim pushes.
   */
  async hold(rows: HeldRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db
      .insertInto('held_fulfillments')
      .values(
        rows.map((row) => ({
          id: row.id,
          owner_id: row.ownerId,
          reseller_store_id: row.resellerStoreId,
          source_store_id: row.sourceStoreId,
          source_order_id: row.sourceOrderId,
          dedupe_key: row.keys.dedupeKey,
          webhook_id: row.keys.webhookId,
          tracking: JSON.stringify(row.tracking),
          received_at: row.receivedAt,
          watch_pass_id: row.watchPassId,
        })),
      )
      .onConflict((oc) =>
        oc
          .columns(['source_store_id', 'source_order_id', 'dedupe_key'])
          .doUpdateSet({ tracking: sql`excluded.tracking` })
          .where(sql<boolean>`not ((held_fulfillments.tracking -> 'numbers') @> (excluded.tracking -> 'numbers'))`),
      )
      .execute();
  }

  /** Held fulfillments whose order a job of their store has now recorded (it completed), with that job's id. */
  async findClaimable(limit: number): Promise<(HeldRow & { syncJobId: string })[]> {
    const rows = await this.db
      .selectFrom('held_fulfillments as h')
      .innerJoin('sync_jobs as j', (join) => join.onRef('j.source_store_id', '=', 'h.source_store_id').onRef('j.source_order_id', '=', 'h.source_order_id'))
      .selectAll('h')
      .select('j.id as sync_job_id')
      // Those whose claim failed before go behind the others (`markKept`): a few that always fail cannot hold back the rest.
      .orderBy(sql`h.read_failed_at asc nulls first`)
      .orderBy('h.received_at')
      .limit(limit)
      .execute();
    return rows.map((row) => ({ ...heldRowOf(row), syncJobId: row.sync_job_id }));
  }

  async deleteHeld(trx: Trx, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await trx.deleteFrom('held_fulfillments').where('id', '=', sql<string>`any(${ids}::text[])`).execute();
  }

  /**
   * Held fulfillments that no job can own any more (`noJobCanOwn`), at most `limit`: the sweep checks
   * those of a store with jobs ended unplaced (src/fulfillments/unplaced.ts) before forgetting them.
   * Those whose supplier order was never read and refused for now come first, oldest first; then
   * those it was, the least recently tried first (`markKept`): however many a supplier that
   * never answers keeps, each pass reaches every newer one, and they take turns among themselves.
   */
  async findUnowned(limit: number): Promise<HeldRow[]> {
    const rows = await this.db
      .selectFrom('held_fulfillments as h')
      .selectAll('h')
      .where(this.noJobCanOwn('h'))
      .orderBy(sql`h.read_failed_at asc nulls first`)
      .orderBy('h.received_at')
      .limit(limit)
      .execute();
    return rows.map(heldRowOf);
  }

  /** Held fulfillments the sweep could not settle at `at` (their supplier order unreadable for now, or their claim failed): kept, behind the others for the next passes. */
  async markKept(ids: string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.db.updateTable('held_fulfillments').set({ read_failed_at: at }).where('id', '=', sql<string>`any(${ids}::text[])`).execute();
  }

  /**
   * Forgets held fulfillments that no job can own any more (`noJobCanOwn`, read again here: one a job
   * recorded the order of since they were read is kept, and the next claims take it); only those of
   * `ids` when given. Returns how many.
   */
  async forgetUnowned(ids?: string[]): Promise<number> {
    if (ids?.length === 0) return 0;
    let query = this.db.deleteFrom('held_fulfillments as h').where(this.noJobCanOwn('h'));
    if (ids) query = query.where('h.id', '=', sql<string>`any(${ids}::text[])`);
    const result = await query.executeTakeFirst();
    return Number(result.numDeletedRows);
  }


  /**
   * The identities (`<job id>:<dedupe key>`) of the fulfillments these jobs already have, and the
   * tracking numbers they carry (`<job id>#number:<number>`): the divergence watch's port `WatchedFulfillments`.
   */
  async keysOf(syncJobIds: string[]): Promise<Set<string>> {
    if (syncJobIds.length === 0) return new Set();
    const rows = await this.db
      .selectFrom('fulfillments')
      .select(['sync_job_id', 'dedupe_key', 'tracking'])
      .where('sync_job_id', '=', sql<string>`any(${syncJobIds}::text[])`)
      .execute();
    return new Set(
      rows.flatMap((row) => [`${row.sync_job_id}:${row.dedupe_key}`, ...(row.tracking as Tracking).numbers.map((number) => `${row.sync_job_id}#number:${number}`)]),
    );
  }

  transaction<T>(work: (trx: Trx) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }
}

/** A `held_fulfillments` row as the service works with it. */
function heldRowOf(row: Selectable<Database['held_fulfillments']>): HeldRow {
  return {
    id: row.id,
    ownerId: row.owner_id,
    resellerStoreId: row.reseller_store_id,
    sourceStoreId: row.source_store_id,
    sourceOrderId: row.source_order_id,
    keys: { dedupeKey: row.dedupe_key, webhookId: row.webhook_id },
    tracking: row.tracking as Tracking,
    // A timestamp column comes back as the driver gives it (text): the jobs it is compared with need a Date.
    receivedAt: new Date(row.received_at),
    watchPassId: row.watch_pass_id,
  };
}
