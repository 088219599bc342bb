import type { FilterQuery } from '@mikro-orm/postgresql';
import { sql, type RawBuilder } from 'kysely';
import { insertAuditFrom, SYSTEM_ACTOR } from '../audit-log/repository.ts';
import { newId } from '../shared/ids.ts';
import type { AttemptTarget, SettledStep } from '../attempts/kind.ts';
import { writeAttemptTransitions, type AttemptWrite } from '../attempts/repository.ts';
import type { Orm } from '../db/orm.ts';
import { sqlOf, type Db, type Trx } from '../db/sql.ts';
import type { ResellerOrder } from '../orders/types.ts';
import type { SupplierLine } from '../platforms/types.ts';
import { ResellerStore } from '../reseller-stores/entity.ts';
import { SourceStore } from '../source-stores/entity.ts';
import { findPage } from '../db/paging.ts';
import { columnsOf, rowMapper } from '../db/row-mapper.ts';
import { StatementShapes, type Slot, type SlotsOf } from '../db/statement-shapes.ts';
import { locksAfterStep } from '../db/locks.ts';
import { PREPARED } from '../db/prepared.ts';
import { insertReadyEventRowsStep, noEndpointSubscribes, readyEvents, readyEventsAbout } from '../events/repository.ts';
import type { NewEvent } from '../events/types.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import { type OrderFoundBy, type SupplierCancelled, SyncJob } from './entity.ts';

export interface JobFilters extends PageQuery {
  status?: SyncJob['status'] | undefined;
  reseller_store_id?: string | undefined;
  source_store_id?: string | undefined;
  external_order_id?: string | undefined;
}

/**
 * The jobs of one storefront order id (the list filter `external_order_id`): `asGiven` on the
 * custom storefronts among `customStorefronts`, `numeric` (the id read as a number, null for 0)
 * on every other storefront. When the two are the same, the id alone decides.
 */
export interface OrderIdMatch {
  asGiven: string;
  numeric: string | null;
  customStorefronts: string[];
}

function orderIdWhere({ asGiven, numeric, customStorefronts }: OrderIdMatch): FilterQuery<SyncJob> {
  if (numeric === asGiven) return { externalOrderId: asGiven };
  const onCustom: FilterQuery<SyncJob> = { externalOrderId: asGiven, resellerStoreId: { $in: customStorefronts } };
  if (numeric === null) return onCustom;
  return { $or: [onCustom, { externalOrderId: numeric, resellerStoreId: { $nin: customStorefronts } }] };
}

/** Which failed or dead jobs a bulk retry takes (POST /v1/sync_jobs/bulk_retry). */
export interface RetryFilters {
  statuses: ('dead' | 'failed')[];
  resellerStoreId?: string | undefined;
  sourceStoreId?: string | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

/** A job to insert unless its (order, source store) exists, with its `sync_job.created` audit entry. */
export interface JobCandidate {
  id: string;
  owner_id: string;
  reseller_store_id: string;
  source_store_id: string;
  external_order_id: string;
  origin: 'webhook' | 'manual';
  order: ResellerOrder | null;
  queue_message_id: string;
  audit_id: string;
  audit_metadata: Record<string, unknown>;
  actor_id: string;
  /** Its `sync_job.created` event, built before the insert: written with the job when no endpoint subscribes (`insertNew`). */
  events: NewEvent[];
}

/** A candidate's job: inserted for it (`insertNew`), or found existing after the insert (`created: false`, no queue message of its own). */
export interface CandidateJob {
  candidate: string;
  id: string;
  queueMessageId: string | null;
  created: boolean;
  /** Whether its candidate's events were written with it; false when an endpoint subscribes to them (they need deliveries). */
  eventsWritten: boolean;
}

/** The lifecycle columns every new job starts with (`syncJobKind.initialColumns`). */
export interface InitialJobColumns {
  status: string;
  attempts: number;
  retriesLeft: number;
}

/**
 * A job and its source store, unless that store was deleted; and for a job without a stored order
 * (a manual one), the reseller store it reads the order from, unless deleted.
 */
export interface JobWithSource {
  row: SyncJob;
  source: SourceStore | null;
  reseller: ResellerStore | null;
  /**
   * Set by the attempt's `load` (src/sync-jobs/attempt.ts) when the job's record was deleted and
   * `source` is the active record of the same supplier that answers for it: the deleted record's id.
   */
  answersFor?: string;
}

/**
 * Inserted in this order, two groups routing the same orders (a redelivery) wait for each other's
 * index entries in the same sequence, instead of each holding one the other needs (a deadlock).
 */
const byJobKey = (a: JobCandidate, b: JobCandidate) =>
  a.external_order_id.localeCompare(b.external_order_id) || a.source_store_id.localeCompare(b.source_store_id);

/**
 * Whether the job `alias` names could own a supplier order it never recorded: it sent one (attempts
 * > 0) without learning its id, and is not over, or was ended unplaced (VOID) while its whole-order
 * cancellation has not finished looking the order up by its reference (found, it is recorded).
 * Shared by the look-up that holds a fulfillment and, through `noJobCanOwn`, the sweep that forgets held rows.
 */
export const orderInDoubt = (alias: string) => {
  const column = (name: string) => sql.ref(`${alias}.${name}`);
  return sql<boolean>`(${column('source_order_id')} is null and ${column('attempts')} > 0 and (${column('status')} <> 'completed'
    or exists (select 1 from cancellations c where c.sync_job_id = ${column('id')} and c.scope = 'order' and c.status <> 'completed')))`;
};

/**
 * That no sync job can own the held row `heldAlias` names any more (a shipment or a supplier's own
 * cancellation kept for a job in doubt: `held_fulfillments`, `held_supplier_cancellations`): no job
 * of its store has recorded its order, and no job of its store that existed when it arrived is in
 * doubt any more (`orderInDoubt`: it completed with another order, or was ended unplaced and its
 * order looked up). What is left was the supplier's own sale. The held rows' repositories get it as
 * their `NoJobCanOwn` port, from the composition root.
 */
export const noJobCanOwn = (heldAlias: string) => {
  const held = (name: string) => sql.ref(`${heldAlias}.${name}`);
  return sql<boolean>`not exists (select 1 from sync_jobs as j where j.source_store_id = ${held('source_store_id')}
    and (j.source_order_id = ${held('source_order_id')} or (${orderInDoubt('j')} and j.created_at < ${held('received_at')})))`;
};

/**
 * Whether the job `alias` names was ended unplaced after it had sent its order: its whole storefront
 * order was cancelled while its placement was in doubt, and the cancellation's lookup by reference
 * found nothing (`not_placed`). A supplier list that did not show the order yet (or at all) makes
 * that lookup miss an order that exists: a shipment of an order whose reference names such a job
 * is that job's after all.
 */
export const endedUnplacedAfterSending = (alias: string) => {
  const column = (name: string) => sql.ref(`${alias}.${name}`);
  return sql<boolean>`(${column('source_order_id')} is null and ${column('attempts')} > 0 and ${column('status')} = 'completed'
    and exists (select 1 from cancellations c where c.sync_job_id = ${column('id')} and c.scope = 'order' and c.status = 'completed' and c.outcome = 'not_placed'))`;
};

/**
 * How long after its creation a job ended unplaced is still looked for as the owner of a shipment of
 * an order no job recorded (which costs a read of that order on the supplier): a supplier ships
 * within weeks, not months.
 */
const UNPLACED_OWNER_WINDOW_MS = 60 * 24 * 60 * 60_000;

/** The `foundBy` (and the pass's `watchPassId`) of a `sync_job.order_found` audit entry's metadata. */
function foundByMetadata(foundBy: OrderFoundBy) {
  switch (foundBy.by) {
    case 'cancellation':
      return sql<unknown>`jsonb_build_object('foundBy', ${"the job's reference, looked up by its cancellation"}::text)`;
    case 'divergence_watch':
      return sql<unknown>`jsonb_build_object('foundBy', ${"the job's reference, listed by the divergence watch"}::text, 'watchPassId', ${foundBy.watchPassId}::text)`;
    case 'fulfillment_webhook':
      return sql<unknown>`jsonb_build_object('foundBy', ${"the job's reference, on the supplier order a fulfillment webhook named"}::text)`;
  }
}

/** Every statement on sync_jobs. */
export class SyncJobRepository {
  /** The batch load's column list and row mappers (`loadWithSources`), built on its first use. */
  #mappers: { columns: 'j.id'[]; job: (row: Record<string, unknown>) => SyncJob; source: (row: Record<string, unknown>) => SourceStore; reseller: (row: Record<string, unknown>) => ResellerStore } | undefined;

  constructor(
    private readonly orm: Orm,
    /** What this kind's transitions also write in their statement (src/workers/kinds.ts `SETTLED_STEPS`); the composition root hands them to the repositories that write transitions. */
    onSettled: readonly SettledStep[] = [],
  ) {
    this.#target = { name: 'sync_job', table: 'sync_jobs', resultColumn: 'source_order_id', onSettled };
  }

  /** Where this repository's transitions are written: one object, so their statements are built once (src/db/statement-shapes.ts). */
  readonly #target: AttemptTarget;
  /** The hot statements, each built once (src/db/statement-shapes.ts). */
  readonly #statements = new StatementShapes();

  private get db(): Db {
    return sqlOf(this.orm);
  }

  findOwned(ownerId: string, id: string): Promise<SyncJob | null> {
    return this.orm.em.fork().findOne(SyncJob, { id, ownerId });
  }

  /** The owner's job of this order and source store (one at most: they are unique together). */
  findOwnedOfOrder(ownerId: string, externalOrderId: string, sourceStoreId: string): Promise<SyncJob | null> {
    return this.orm.em.fork().findOne(SyncJob, { ownerId, externalOrderId, sourceStoreId });
  }

  findById(id: string): Promise<SyncJob | null> {
    return this.orm.em.fork().findOne(SyncJob, { id });
  }

  list(ownerId: string, filters: Omit<JobFilters, 'external_order_id'>, orderId?: OrderIdMatch): Promise<Page<SyncJob>> {
    const where: FilterQuery<SyncJob> = {
      ownerId,
      ...(filters.status !== undefined && { status: filters.status }),
      ...(filters.reseller_store_id !== undefined && { resellerStoreId: filters.reseller_store_id }),
      ...(filters.source_store_id !== undefined && { sourceStoreId: filters.source_store_id }),
    };
    return findPage(this.orm.em, SyncJob, orderId === undefined ? where : { $and: [where, orderIdWhere(orderId)] }, filters);
  }

  /**
   * Up to `limit` of the owner's jobs matching a bulk retry, oldest first. Without their order
   * documents: a retry does not need them, and a thousand of them would weigh megabytes.
   */
  async findRetryable(ownerId: string, filters: RetryFilters, limit: number): Promise<SyncJob[]> {
    const { createdAfter, createdBefore } = filters;
    const jobs = await this.orm.em.fork().find(
      SyncJob,
      {
        ownerId,
        status: { $in: filters.statuses },
        ...(filters.resellerStoreId !== undefined && { resellerStoreId: filters.resellerStoreId }),
        ...(filters.sourceStoreId !== undefined && { sourceStoreId: filters.sourceStoreId }),
        ...((createdAfter || createdBefore) && { createdAt: { ...(createdAfter && { $gt: createdAfter }), ...(createdBefore && { $lt: createdBefore }) } }),
      },
      { orderBy: { id: 'asc' }, limit, exclude: ['order'] },
    );
    return jobs as unknown as SyncJob[];
  }

  /** The job one of these source stores placed as `sourceOrderId`, if any. */
  findBySourceOrder(sourceStoreIds: string[], sourceOrderId: string): Promise<SyncJob | null> {
    return this.orm.em.fork().findOne(SyncJob, { sourceStoreId: { $in: sourceStoreIds }, sourceOrderId });
  }

  /**
   * Which of these source stores have a job that could own an order the service never recorded
   * (`orderInDoubt`), created before `before`. A job that never sent anything, or was created later, cannot have
   * placed an order that a supplier has already fulfilled.
   */
  async storesWithOrdersInDoubt(sourceStoreIds: string[], before: Date): Promise<string[]> {
    // One look-up per store (there is usually one), each stopping at its first such job.
    const found = await Promise.all(
      sourceStoreIds.map((sourceStoreId) =>
        this.db
          .selectFrom('sync_jobs')
          .select('source_store_id')
          .where('source_store_id', '=', sourceStoreId)
          .where(orderInDoubt('sync_jobs'))
          .where('created_at', '<', before)
          .limit(1)
          .executeTakeFirst(),
      ),
    );
    return found.flatMap((row) => (row ? [row.source_store_id] : []));
  }

  /** One statement for the jobs and the stores they call; the ORM only maps the rows. */
  async loadWithSources(jobIds: string[]): Promise<JobWithSource[]> {
    const map = (this.#mappers ??= {
      // Named, not `j.*`: the statement is prepared (see `columnsOf`).
      columns: columnsOf(this.orm, SyncJob).map((column) => `j.${column}` as 'j.id'),
      job: rowMapper(this.orm, SyncJob),
      source: rowMapper(this.orm, SourceStore),
      reseller: rowMapper(this.orm, ResellerStore),
    });
    const rows = await this.#statements.rows(this.db, 'load', ([ids]) => this.#loadStatement(map.columns, ids), [JSON.stringify(jobIds)]);
    return rows.map(({ source_store: source, reseller_store: reseller, ...job }) => ({
      row: map.job(job as Record<string, unknown>),
      source: source ? map.source(source) : null,
      reseller: reseller ? map.reseller(reseller) : null,
    }));
  }

  /** `loadWithSources`'s statement, its ids (a JSON array) in a slot. */
  #loadStatement(columns: 'j.id'[], ids: Slot) {
    return this.db
      .selectFrom('sync_jobs as j')
      .leftJoin('source_stores as s', (join) => join.onRef('s.id', '=', 'j.source_store_id').on('s.deleted_at', 'is', null))
      .leftJoin('reseller_stores as r', (join) =>
        join.onRef('r.id', '=', 'j.reseller_store_id').on('r.deleted_at', 'is', null).on(sql<boolean>`j."order" is null`),
      )
      .select(columns)
      .select(sql<Record<string, unknown> | null>`to_jsonb(s)`.as('source_store'))
      .select(sql<Record<string, unknown> | null>`to_jsonb(r)`.as('reseller_store'))
      // The ids as a set-returning function, not `= any(array)`: its estimate (100 rows) does not depend
      // on the parameter, so PostgreSQL settles on a generic plan instead of planning every call.
      .where('j.id', 'in', sql<string>`(select jsonb_array_elements_text(${ids}::jsonb))`)
      .modifyEnd(PREPARED);
  }

  /**
   * One statement for every candidate: insert the jobs that do not exist yet with their audit
   * entries (`on conflict do nothing` on the unique (order, source store) index decides which are
   * new). The inserted jobs' `sync_job.created` events are written by the same statement when no
   * endpoint subscribes to any of the candidates' events (as an attempt's outcome writes its own,
   * src/attempts/repository.ts), so the routing transaction makes no round trip for them; otherwise
   * `eventsWritten` is false and the caller appends them to the outbox, with their deliveries.
   * The locks on `lockKeys` are taken by the same statement once the jobs are inserted, as a
   * statement of their own after it would (the routing's cancellation locks, src/cancellations/).
   * Returns the candidates inserted; the caller reads the jobs of the others (`findByOrderKeys`).
   * It reads no table, so its plan does not depend on sync_jobs' size, and it is prepared
   * (src/db/prepared.ts): planning it cost 0.37 ms a call, half its execution, on the ingest path.
   * (It used to join the candidates to sync_jobs to find the existing jobs too, which a generic plan
   * made on a young table did with a scan of the whole table.)
   */
  async insertNew(trx: Trx, candidates: JobCandidate[], initial: InitialJobColumns, now: Date, lockKeys: string[] = []): Promise<CandidateJob[]> {
    return this.#statements.rows(trx, 'insert', (slots) => this.#insertStatement(trx, slots), [
      JSON.stringify([...candidates].sort(byJobKey).map(({ events: _events, ...candidate }) => candidate)),
      JSON.stringify(candidates.flatMap((candidate) => readyEvents(candidate.events, now).map((event) => ({ ...event, about: candidate.id })))),
      lockKeys,
      initial.status,
      initial.attempts,
      initial.retriesLeft,
      now,
    ]);
  }

  /** `insertNew`'s statement, its candidates and their events (JSON arrays), lock keys, initial columns and time in slots. */
  #insertStatement(trx: Trx, [candidates, events, lockKeys, status, attempts, retriesLeft, now]: SlotsOf<[string, string, string[], string, number, number, Date]>) {
    return trx
      // (A raw CTE body is not parenthesised by Kysely, hence the parentheses.)
      .with(
        'candidate',
        () => sql<JobCandidate>`(
          select * from jsonb_to_recordset(${candidates}::jsonb) as c(
            id text, owner_id text, reseller_store_id text, source_store_id text, external_order_id text, origin text,
            "order" jsonb, queue_message_id text, audit_id text, audit_metadata jsonb, actor_id text))`,
      )
      .with('event', () => readyEventsAbout(events))
      // Uncorrelated, so evaluated once: whether the events may be written here (none needs a delivery).
      .with('unsubscribed', () => sql<{ free: boolean }>`(select ${noEndpointSubscribes('event')} as free)`)
      .with('inserted', (db) =>
        db
          .insertInto('sync_jobs')
          .columns([
            'id', 'owner_id', 'reseller_store_id', 'source_store_id', 'external_order_id', 'origin', 'status', 'attempts',
            'retries_left', 'order', 'queue_message_id', 'version', 'created_at', 'updated_at',
          ])
          .expression((eb) =>
            eb
              .selectFrom('candidate')
              .select([
                'id', 'owner_id', 'reseller_store_id', 'source_store_id', 'external_order_id', 'origin',
                eb.val(status.typed<string>()).as('status'),
                eb.val(attempts.typed<number>()).as('attempts'),
                eb.val(retriesLeft.typed<number>()).as('retries_left'),
                sql<unknown>`"order"`.as('order'),
                'queue_message_id',
                eb.lit(1).as('version'),
                eb.val(now.typed<Date>()).as('created_at'),
                eb.val(now.typed<Date>()).as('updated_at'),
              ]),
          )
          .onConflict((oc) => oc.columns(['external_order_id', 'source_store_id']).doNothing())
          .returning(['id', 'queue_message_id']),
      )
      .with('audited', (db) =>
        insertAuditFrom(
          db,
          db
            .selectFrom('inserted as i')
            .innerJoin('candidate as c', 'c.id', 'i.id')
            .select((eb) => [
              'c.audit_id as id',
              'c.owner_id',
              'c.reseller_store_id',
              eb.val('sync_job.created').as('action'),
              eb.val('sync_job').as('resource_type'),
              'i.id as resource_id',
              sql<unknown>`c.audit_metadata`.as('metadata'),
              'c.actor_id',
              eb.val(now.typed<Date>()).as('created_at'),
            ]),
        ),
      )
      .with('ready_events', () => sql<{ id: string }>`${insertReadyEventRowsStep(sql`select e.* from event e join inserted i on i.id = e.about where (select free from unsubscribed)`)}`)
      .with('locked', () => locksAfterStep(lockKeys, 'inserted'))
      .selectFrom('inserted')
      // Read once, before the first row (even when there is none): the locks are taken.
      .where(sql<boolean>`(select locks from locked) >= 0`)
      .select([
        'id as candidate',
        'id',
        'queue_message_id as queueMessageId',
        sql<boolean>`true`.as('created'),
        sql<boolean>`(select free from unsubscribed)`.as('eventsWritten'),
      ])
      .modifyEnd(PREPARED);
  }

  /** The jobs of these (order, source store) pairs, as this transaction sees them now. */
  findByOrderKeys(trx: Trx, keys: { external_order_id: string; source_store_id: string }[]) {
    return trx
      .selectFrom('sync_jobs')
      .select(['id', 'external_order_id', 'source_store_id'])
      .where(
        sql<boolean>`(external_order_id, source_store_id) in (
          select * from unnest(${keys.map((k) => k.external_order_id)}::text[], ${keys.map((k) => k.source_store_id)}::text[]))`,
      )
      .execute();
  }

  /** Every job of these reseller orders, as this transaction sees them now, oldest first. */
  findByOrders(trx: Trx, orders: { resellerStoreId: string; externalOrderId: string }[]) {
    return trx
      .selectFrom('sync_jobs')
      .select(['id', 'reseller_store_id', 'external_order_id'])
      .where(
        sql<boolean>`(reseller_store_id, external_order_id) in (
          select * from unnest(${orders.map((o) => o.resellerStoreId)}::text[], ${orders.map((o) => o.externalOrderId)}::text[]))`,
      )
      .orderBy('id')
      .execute();
  }

  /** Version-checked writes of jobs' lifecycle columns, with their audit entries (see writeAttemptTransitions). */
  writeTransitions(db: Db | Trx, writes: AttemptWrite<SyncJob>[]): Promise<boolean[]> {
    return writeAttemptTransitions(db, this.#target, writes);
  }

  /** Runs `work` in one Kysely transaction on the ORM's pool. */
  transaction<T>(work: (trx: Trx) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }

  // What the cancellations feature reads and writes of jobs (its port `CancelledJobs`, src/cancellations/ports.ts).

  /** The order's jobs as this transaction sees them, oldest first. */
  async ofOrderIn(trx: Trx, resellerStoreId: string, externalOrderId: string): Promise<SyncJob[]> {
    const rows = await trx
      .selectFrom('sync_jobs')
      .selectAll()
      .where('reseller_store_id', '=', resellerStoreId)
      .where('external_order_id', '=', externalOrderId)
      .orderBy('id')
      .execute();
    const em = this.orm.em.fork();
    return rows.map((row) => em.map(SyncJob, row as Record<string, unknown>));
  }

  /** The job as it is now, never from an identity map (a job polled while its placement is in flight). */
  findCurrent(id: string): Promise<SyncJob | null> {
    return this.orm.em.fork().findOne(SyncJob, { id }, { disableIdentityMap: true });
  }

  /**
   * Which of these source stores have a job ended unplaced after sending its order
   * (`endedUnplacedAfterSending`), created before `before` and within UNPLACED_OWNER_WINDOW_MS of it:
   * a fulfillment of an order no job recorded may be such a job's (the webhooks' port `JobsBySourceOrder`).
   */
  async storesWithUnplacedOrders(sourceStoreIds: string[], before: Date): Promise<string[]> {
    const found = await Promise.all(
      sourceStoreIds.map((sourceStoreId) =>
        this.db
          .selectFrom('sync_jobs')
          .select('source_store_id')
          .where('source_store_id', '=', sourceStoreId)
          .where(endedUnplacedAfterSending('sync_jobs'))
          .where('created_at', '<', before)
          .where('created_at', '>', new Date(before.getTime() - UNPLACED_OWNER_WINDOW_MS))
          .limit(1)
          .executeTakeFirst(),
      ),
    );
    return found.flatMap((row) => (row ? [row.source_store_id] : []));
  }

  /**
   * This supplier store's jobs ended unplaced after sending their order (`endedUnplacedAfterSending`),
   * created before `before`, at any age, newest first, at most `limit`: the jobs a shipment the
   * service could not attribute may belong to (the webhooks' port `JobsBySourceOrder`).
   */
  async unplacedOf(sourceStoreId: string, before: Date, limit: number): Promise<SyncJob[]> {
    const rows = await this.db
      .selectFrom('sync_jobs')
      .selectAll()
      .where('source_store_id', '=', sourceStoreId)
      .where(endedUnplacedAfterSending('sync_jobs'))
      .where('created_at', '<', before)
      .orderBy('created_at', 'desc')
      .limit(limit)
      .execute();
    const em = this.orm.em.fork();
    return rows.map((row) => em.map(SyncJob, row as Record<string, unknown>));
  }

  /**
   * Of these jobs (by id: the reference a supplier order carries), those of this supplier store ended
   * unplaced after sending their order (`endedUnplacedAfterSending`), by id: the divergence watch's and
   * the webhooks' ports.
   */
  unplacedAmong(sourceStoreId: string, jobIds: string[]): Promise<Map<string, SyncJob>> {
    return this.#storeJobsAmong(sourceStoreId, jobIds, endedUnplacedAfterSending('sync_jobs'));
  }

  /**
   * Adds to a manual job not placed yet the order its attempt is about to send to the supplier
   * (`sentOrders`), before the create call. Not versioned: the attempt holds the job, and its outcome
   * is written as usual.
   */
  async recordSentOrder(id: string, order: ResellerOrder): Promise<void> {
    await this.db
      .updateTable('sync_jobs')
      .set({ sent_orders: sql`coalesce(sent_orders, '[]'::jsonb) || jsonb_build_array(${JSON.stringify(order)}::jsonb)` })
      .where('id', '=', id)
      .where('origin', '=', 'manual')
      .where('order', 'is', null)
      .execute();
  }

  /**
   * Stores on manual jobs (no order stored: POST /v1/sync_jobs) the order their attempt read from the
   * storefront and placed, in the transaction recording their placement; a job with an order keeps it.
   */
  async recordPlacedOrdersIn(trx: Trx, placed: { id: string; order: ResellerOrder }[]): Promise<void> {
    for (const { id, order } of placed) {
      await trx.updateTable('sync_jobs').set({ order: JSON.stringify(order) }).where('id', '=', id).where('origin', '=', 'manual').where('order', 'is', null).execute();
    }
  }

  /** Replaces a job's stored order (a job cut by some lines before it was placed); version-checked. */
  async replaceOrderIn(trx: Trx, job: SyncJob): Promise<boolean> {
    const result = await trx
      .updateTable('sync_jobs')
      .set((eb) => ({ order: JSON.stringify(job.order), version: eb('version', '+', 1), updated_at: new Date() }))
      .where('id', '=', job.id)
      .where('version', '=', job.version)
      .executeTakeFirst();
    const moved = Number(result.numUpdatedRows) === 1;
    if (moved) job.version += 1;
    return moved;
  }

  /**
   * A voided job's order, found by its reference: by its cancellation's lookup (`CancelledJobs`), by
   * a divergence-watch pass (`WatchedJobs`: the pass's `watchPassId` is audited too), or on the
   * supplier order a fulfillment webhook names (`JobsBySourceOrder`); `foundBy` says which. Conditional
   * on the job being `completed` with no order; versioned, as the job's state changes, with audit entry `sync_job.order_found`
   * (the job's only change of `sourceOrderId` that no transition makes). Returns whether it was
   * recorded now (false: the job has an order already, or is not a voided one).
   */
  recordFoundOrder(syncJobId: string, sourceOrderId: string, foundBy: OrderFoundBy): Promise<boolean> {
    return this.recordFoundOrderIn(this.db, syncJobId, sourceOrderId, foundBy);
  }

  /**
   * `recordFoundOrder` in the caller's transaction: the divergence watch records the still-open order
   * of a job whose cancellation ended `not_placed` in the transaction that asks for its new
   * cancellation (src/cancellations/service.ts `cancelFoundOrder`), so neither is ever left without the other.
   */
  async recordFoundOrderIn(db: Trx | Db, syncJobId: string, sourceOrderId: string, foundBy: OrderFoundBy): Promise<boolean> {
    const now = new Date();
    const foundByJson = foundByMetadata(foundBy);
    const recorded = await db
      .with('found', (db) =>
        db
          .updateTable('sync_jobs')
          .set((eb) => ({ source_order_id: sourceOrderId, version: eb('version', '+', 1), updated_at: now }))
          .where('id', '=', syncJobId)
          .where('status', '=', 'completed')
          .where('source_order_id', 'is', null)
          .returning(['id', 'owner_id', 'reseller_store_id', 'external_order_id', 'source_store_id']),
      )
      .with('audited', (db) =>
        insertAuditFrom(
          db,
          db.selectFrom('found as f').select((eb) => [
            eb.val(newId('auditEntry')).as('id'),
            'f.owner_id',
            'f.reseller_store_id',
            eb.val('sync_job.order_found').as('action'),
            eb.val('sync_job').as('resource_type'),
            'f.id as resource_id',
            sql<unknown>`jsonb_build_object('sourceOrderId', ${sourceOrderId}::text, 'externalOrderId', f.external_order_id, 'sourceStoreId', f.source_store_id) || ${foundByJson}`.as('metadata'),
            eb.val(SYSTEM_ACTOR).as('actor_id'),
            eb.val(now).as('created_at'),
          ]),
        ),
      )
      .selectFrom('found')
      .select('id')
      .execute();
    return recorded.length > 0;
  }

  /**
   * Keeps a job's supplier lines as a read of its order gave them, when it kept none from the create
   * answer (placed before they were kept, or found by its reference after a lost answer). A column of
   * its own, written once: no transition reads it, so the job's version is left alone.
   */
  async keepSupplierLines(syncJobId: string, lines: SupplierLine[]): Promise<void> {
    await this.db
      .updateTable('sync_jobs')
      .set({ supplier_lines: JSON.stringify(lines) })
      .where('id', '=', syncJobId)
      .where('supplier_lines', 'is', null)
      .execute();
  }

  /**
   * The supplier's own cancellation recorded on a job, as this transaction sees it, the row locked
   * until it ends (the caller then writes it: `markSupplierCancelledIn`); null when none is recorded.
   * `lines` null: the whole order.
   */
  async supplierCancellationIn(trx: Trx, syncJobId: string): Promise<SupplierCancelled | null> {
    const row = await trx
      .selectFrom('sync_jobs')
      .select(['supplier_cancelled_at', 'supplier_cancel_reason', 'supplier_cancelled_lines'])
      .where('id', '=', syncJobId)
      .forUpdate()
      .executeTakeFirst();
    if (!row || row.supplier_cancelled_at === null) return null;
    return { at: new Date(row.supplier_cancelled_at), reason: row.supplier_cancel_reason, lines: (row.supplier_cancelled_lines as SupplierCancelled['lines']) ?? null };
  }

  /** Records a supplier's own cancellation on a job: the first, or one that cancelled more of the order than the one recorded. */
  async markSupplierCancelledIn(trx: Trx, syncJobId: string, cancelled: SupplierCancelled): Promise<void> {
    await trx
      .updateTable('sync_jobs')
      .set({
        supplier_cancelled_at: cancelled.at,
        supplier_cancel_reason: cancelled.reason,
        supplier_cancelled_lines: cancelled.lines === null ? null : JSON.stringify(cancelled.lines),
      })
      .where('id', '=', syncJobId)
      .execute();
  }

  /**
   * Version-checked writes of jobs ended unplaced by a cancellation (the machine's VOID), with their
   * audit entries and the settled steps of every transition: a dead job voided so is `completed`,
   * which resolves its `job_dead` entry on the reseller's to-do list (nothing is left to retry).
   */
  writeVoidsIn(trx: Trx, writes: AttemptWrite<SyncJob>[]): Promise<boolean[]> {
    return writeAttemptTransitions(trx, this.#target, writes);
  }

  /**
   * Of these jobs (named by the reference a supplier's listed order carries: the job's id), those of
   * this supplier store whose order is in doubt (`orderInDoubt`: sent, its id never learnt). The
   * divergence watch's port `WatchedJobs`: such an order's shipments are held for the job, and its
   * cancellation by the supplier is recorded on the job.
   */
  inDoubtAmong(sourceStoreId: string, jobIds: string[]): Promise<Map<string, SyncJob>> {
    return this.#storeJobsAmong(sourceStoreId, jobIds, orderInDoubt('sync_jobs'));
  }

  /** Of these jobs (by id), those of this supplier store for which `condition` holds, by id. */
  async #storeJobsAmong(sourceStoreId: string, jobIds: string[], condition: RawBuilder<boolean>): Promise<Map<string, SyncJob>> {
    if (jobIds.length === 0) return new Map();
    const rows = await this.db
      .selectFrom('sync_jobs')
      .selectAll()
      .where('source_store_id', '=', sourceStoreId)
      .where('id', '=', sql<string>`any(${jobIds}::text[])`)
      .where(condition)
      .execute();
    const em = this.orm.em.fork();
    return new Map(rows.map((row) => [row.id, em.map(SyncJob, row as Record<string, unknown>)]));
  }

  /** Which of these orders of a reseller store have a job, routed or made by hand (the divergence watch's port `WatchedJobs`). */
  async ordersWithJobs(resellerStoreId: string, externalOrderIds: string[]): Promise<Set<string>> {
    if (externalOrderIds.length === 0) return new Set();
    const rows = await this.db
      .selectFrom('sync_jobs')
      .select('external_order_id')
      .distinct()
      .where('external_order_id', '=', sql<string>`any(${externalOrderIds}::text[])`)
      .where('reseller_store_id', '=', resellerStoreId)
      .execute();
    return new Set(rows.map((row) => row.external_order_id));
  }

  /** The jobs that placed these orders on this supplier store, by supplier order id (the divergence watch's port `WatchedJobs`). */
  async bySourceOrders(sourceStoreId: string, sourceOrderIds: string[]): Promise<Map<string, SyncJob>> {
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
}
