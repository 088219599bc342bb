import { sql, type RawBuilder, type Selectable } from 'kysely';
import type { AttemptTarget } from '../attempts/kind.ts';
import { writeAttemptTransitions, type AttemptWrite } from '../attempts/repository.ts';
import type { Orm } from '../db/orm.ts';
import type { Database } from '../db/schema.ts';
import type { OrderRef } from '../orders/port.ts';
import { sqlOf, type Db, type SqlStep, type Trx } from '../db/sql.ts';
import type { Fulfillment } from '../fulfillments/entity.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';
import { Cancellation, OrderCancellation, type CancelledLine } from './entity.ts';
import { holdLocks } from '../db/locks.ts';
import { PREPARED } from '../db/prepared.ts';
import { StatementShapes } from '../db/statement-shapes.ts';

/** A cancellation, its sync job and the source store it calls (null once deleted). */
export interface CancellationWork {
  row: Cancellation;
  job: SyncJob | null;
  source: SourceStore | null;
}

/** Counts of a store's cancellations, by status and by outcome. */
export interface CancellationCounts {
  byStatus: Record<string, number>;
  byOutcome: Record<string, number>;
}

/**
 * A row read with Kysely as its entity's properties: camelCase names, timestamps as Dates (the
 * driver hands them over as text). For reads inside a transaction that has no ORM at hand.
 */
export function fromRow<T>(row: Record<string, unknown>): T {
  const entity: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(row)) {
    const property = column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase());
    entity[property] = column.endsWith('_at') && value !== null && value !== undefined ? new Date(value as string) : value;
  }
  return entity as T;
}

/** The table a manual transition writes (one object, so its statement is built once: `writeAttemptTransitions`). */
const CANCELLATION_TARGET: AttemptTarget = { name: 'cancellation', table: 'cancellations', resultColumn: 'outcome' };

const cancelLockKey = (order: OrderRef) => `cancel:${order.resellerStoreId}:${order.externalOrderId}`;

/** The keys of these orders' cancellation locks (`lockOrders`), also for a statement that takes them as a step (src/db/locks.ts `locksAfterStep`). */
export const orderLockKeys = (orders: OrderRef[]): string[] => orders.map(cancelLockKey);

/** Every statement on cancellations and order_cancellations. */
export class CancellationRepository {
  /** The intake's hot reads, each built once (src/db/statement-shapes.ts). */
  readonly #statements = new StatementShapes();

  constructor(private readonly orm: Orm) {}

  private get db(): Db {
    return sqlOf(this.orm);
  }

  transaction<T>(work: (trx: Trx) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }

  /**
   * Serialises the signals and the routing of these reseller orders for the rest of the transaction:
   * one lock per order, taken in key order so two groups (of signals, or of routed orders) never wait
   * on each other's.
   */
  async lockOrders(trx: Trx, orders: OrderRef[]): Promise<void> {
    await holdLocks(trx, orderLockKeys(orders), PREPARED);
  }

  /** The signals recorded for any of these orders, oldest first (one indexed read). */
  async signalsOfOrders(trx: Trx, orders: OrderRef[]): Promise<OrderCancellation[]> {
    if (orders.length === 0) return [];
    const rows = await this.#statements.rows(
      trx,
      'signals of orders',
      ([stores, orderIds]) =>
        trx
          .selectFrom('order_cancellations')
          .selectAll()
          // One text whatever the number of orders (a routing group's), so it is built once.
          .where(sql<boolean>`(reseller_store_id, external_order_id) in (select * from unnest(${stores}::text[], ${orderIds}::text[]))`)
          .orderBy('id'),
      [orders.map((order) => order.resellerStoreId), orders.map((order) => order.externalOrderId)],
    );
    if (rows.length === 0) return [];
    const em = this.orm.em.fork();
    return rows.map((row) => em.map(OrderCancellation, row as Record<string, unknown>));
  }

  /** A finished cancellation found too late after all (the supplier shipped); version-checked. */
  async markTooLate(trx: Trx, cancellation: Cancellation, reason: string): Promise<boolean> {
    const moved = await trx
      .updateTable('cancellations')
      .set((eb) => ({ outcome: 'too_late', reason, version: eb('version', '+', 1), updated_at: new Date() }))
      .where('id', '=', cancellation.id)
      .where('version', '=', cancellation.version)
      .executeTakeFirst();
    return Number(moved.numUpdatedRows) === 1;
  }

  /** Records a signal; null when this one (same store and dedupe key) was recorded before. */
  async insertSignal(trx: Trx, signal: OrderCancellation): Promise<string | null> {
    const row = await trx
      .insertInto('order_cancellations')
      .values({
        id: signal.id,
        owner_id: signal.ownerId,
        reseller_store_id: signal.resellerStoreId,
        external_order_id: signal.externalOrderId,
        scope: signal.scope,
        lines: JSON.stringify(signal.lines),
        dedupe_key: signal.dedupeKey,
        received_at: signal.receivedAt,
        occurred_at: signal.occurredAt ?? null,
      })
      .onConflict((oc) => oc.columns(['reseller_store_id', 'dedupe_key']).doNothing())
      .returning('id')
      .executeTakeFirst();
    return row?.id ?? null;
  }

  /** Whether the signal's `order.cancelled` audit entry was written (its first application committed). */
  async signalAudited(trx: Trx, signal: OrderCancellation): Promise<boolean> {
    const row = await trx
      .selectFrom('audit_entries')
      .select('id')
      .where('reseller_store_id', '=', signal.resellerStoreId)
      .where('resource_id', '=', signal.externalOrderId)
      .where('action', '=', 'order.cancelled')
      .where(sql<boolean>`metadata->>'signalId' = ${signal.id}`)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** The signals recorded for an order, oldest first. */
  async signalsOf(trx: Trx, resellerStoreId: string, externalOrderId: string): Promise<OrderCancellation[]> {
    const rows = await trx
      .selectFrom('order_cancellations')
      .selectAll()
      .where('reseller_store_id', '=', resellerStoreId)
      .where('external_order_id', '=', externalOrderId)
      .orderBy('id')
      .execute();
    const em = this.orm.em.fork();
    return rows.map((row) => em.map(OrderCancellation, row as Record<string, unknown>));
  }

  forJobsIn(db: Trx | Db, syncJobIds: string[]): Promise<Cancellation[]> {
    return cancellationsIn(db, syncJobIds);
  }

  /** A job's cancellations, oldest first. */
  listForJob(syncJobId: string): Promise<Cancellation[]> {
    return this.forJobsIn(this.db, [syncJobId]);
  }

  findOwned(ownerId: string, syncJobId: string, id: string): Promise<Cancellation | null> {
    return this.orm.em.fork().findOne(Cancellation, { id, syncJobId, ownerId });
  }

  async insert(trx: Trx, rows: Cancellation[]): Promise<void> {
    if (rows.length === 0) return;
    await trx
      .insertInto('cancellations')
      .values(
        rows.map((row) => ({
          id: row.id,
          owner_id: row.ownerId,
          reseller_store_id: row.resellerStoreId,
          sync_job_id: row.syncJobId,
          signal_id: row.signalId,
          scope: row.scope,
          lines: JSON.stringify(row.lines),
          status: row.status,
          attempts: row.attempts,
          retries_left: row.retriesLeft,
          outcome: row.outcome ?? null,
          reason: row.reason ?? null,
          error_message: row.errorMessage ?? null,
          completed_at: row.completedAt ?? null,
          failed_at: row.failedAt ?? null,
          dead_at: row.deadAt ?? null,
          queue_message_id: row.queueMessageId ?? null,
          version: row.version,
          created_at: row.createdAt,
          updated_at: row.updatedAt,
        })),
      )
      .execute();
  }

  /** Cancellations by id (an attempt's rows). */
  async findByIds(ids: string[]): Promise<Cancellation[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('cancellations').selectAll().where('id', '=', sql<string>`any(${ids}::text[])`).execute();
    const em = this.orm.em.fork();
    return rows.map((row) => em.map(Cancellation, row as Record<string, unknown>));
  }

  /**
   * What an attempt learnt beside its outcome (the lines actually cancelled, the reason), written
   * before the outcome while the attempt still holds the row; the outcome's write follows.
   */
  async recordDetail(id: string, version: number, detail: { reason: string | null; lines?: CancelledLine[]; closesOrder?: true }): Promise<void> {
    await this.db
      .updateTable('cancellations')
      .set({ reason: detail.reason, ...(detail.lines && { lines: JSON.stringify(detail.lines) }), ...(detail.closesOrder && { closes_order: true }) })
      .where('id', '=', id)
      .where('version', '=', version)
      .execute();
  }

  /**
   * Marks a cancellation whose lines were cut from its job's stored order (its `reason`) while an
   * attempt holds it (`processing`). Not version-checked: a worker letting a slow attempt go hands the
   * row to another message (a new version) while the attempt runs on.
   */
  async markCut(trx: Trx, cancellationId: string, reason: string): Promise<boolean> {
    const result = await trx.updateTable('cancellations').set({ reason }).where('id', '=', cancellationId).where('status', '=', 'processing').executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /**
   * Keeps the reason of what an attempt is about to do (a lines cancellation cancelling the whole
   * order) while it holds the row (`processing`), so a retry after the call's answer was lost knows.
   * Not version-checked, as `markCut`. False when the row is no longer being attempted.
   */
  async recordIntent(cancellationId: string, reason: string): Promise<boolean> {
    const result = await this.db.updateTable('cancellations').set({ reason }).where('id', '=', cancellationId).where('status', '=', 'processing').executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  writeTransitions(db: Db | Trx, writes: AttemptWrite<Cancellation>[]): Promise<boolean[]> {
    return writeAttemptTransitions(db, CANCELLATION_TARGET, writes);
  }

  /** The store's cancellations counted by status and by outcome. */
  async countsFor(resellerStoreId: string): Promise<CancellationCounts> {
    const rows = await this.db
      .selectFrom('cancellations')
      .select(['status', 'outcome', sql<number>`count(*)::int`.as('count')])
      .where('reseller_store_id', '=', resellerStoreId)
      .groupBy(['status', 'outcome'])
      .execute();
    const byStatus: Record<string, number> = {};
    const byOutcome: Record<string, number> = {};
    for (const row of rows) {
      byStatus[row.status] = (byStatus[row.status] ?? 0) + row.count;
      if (row.outcome) byOutcome[row.outcome] = (byOutcome[row.outcome] ?? 0) + row.count;
    }
    return { byStatus, byOutcome };
  }
}

/** These jobs with their fulfillments as this transaction sees them (for the events written in it), by job id; a job gone is left out. */
export async function jobDetailsIn(trx: Trx, syncJobIds: string[]): Promise<Map<string, { job: SyncJob; fulfillments: Fulfillment[] }>> {
  const details = new Map<string, { job: SyncJob; fulfillments: Fulfillment[] }>();
  if (syncJobIds.length === 0) return details;
  const rows = await trx.selectFrom('sync_jobs').selectAll().where('id', 'in', syncJobIds).execute();
  for (const row of rows) details.set(row.id, { job: fromRow<SyncJob>(row), fulfillments: [] });
  if (details.size === 0) return details;
  const fulfillments = await trx.selectFrom('fulfillments').selectAll().where('sync_job_id', 'in', [...details.keys()]).orderBy('id').execute();
  for (const fulfillment of fulfillments) details.get(fulfillment.sync_job_id)?.fulfillments.push(fromRow<Fulfillment>(fulfillment));
  return details;
}

/** The cancellations of these jobs as this transaction sees them, oldest first. */
export async function cancellationsIn(db: Trx | Db, syncJobIds: string[]): Promise<Cancellation[]> {
  if (syncJobIds.length === 0) return [];
  const rows = await db.selectFrom('cancellations').selectAll().where('sync_job_id', 'in', syncJobIds).orderBy('id').execute();
  return rows.map((row) => fromRow<Cancellation>(row));
}

/**
 * The `EventRead` of the sync job kind (src/attempts/kind.ts, handed over in src/workers/kinds.ts):
 * the job being written (`v.id`) has cancellations, which its events show, so they are read in a
 * transaction rather than assumed to be none.
 */
export function jobHasCancellations(): SqlStep {
  return sql`exists (select 1 from cancellations c where c.sync_job_id = v.id)`;
}

/** A held supplier cancellation (held.entity.ts) to keep, or as read back. */
export interface HeldCancellationRow {
  id: string;
  ownerId: string;
  resellerStoreId: string;
  sourceStoreId: string;
  sourceOrderId: string;
  dedupeKey: string;
  reason: string | null;
  lines: CancelledLine[] | null;
  cancelledAt: Date;
  via: Record<string, unknown>;
  receivedAt: Date;
}

/**
 * That no sync job can own the held row a query names `heldAlias` (the sync jobs' `noJobCanOwn`, a
 * port the composition root hands in): the sweep forgets such rows.
 */
export type NoJobCanOwn = (heldAlias: string) => RawBuilder<boolean>;

/**
 * Every statement on held_supplier_cancellations: a supplier's own cancellation kept while a job of
 * its store is in doubt, recorded on the job that learns its order by the sweep, or forgotten once no
 * job can own it (the statements held fulfillments have, src/fulfillments/repository.ts).
 */
export class HeldSupplierCancellationRepository {
  constructor(
    private readonly orm: Orm,
    private readonly noJobCanOwn: NoJobCanOwn,
  ) {}

  private get db(): Db {
    return sqlOf(this.orm);
  }

  /** Keeps supplier cancellations of orders no job has recorded; one kept already (same order, same lines) stays as it was. */
  async hold(rows: HeldCancellationRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db
      .insertInto('held_supplier_cancellations')
      .values(
        rows.map((row) => ({
          id: row.id,
          owner_id: row.ownerId,
          reseller_store_id: row.resellerStoreId,
          source_store_id: row.sourceStoreId,
          source_order_id: row.sourceOrderId,
          dedupe_key: row.dedupeKey,
          reason: row.reason,
          lines: row.lines === null ? null : JSON.stringify(row.lines),
          cancelled_at: row.cancelledAt,
          via: JSON.stringify(row.via),
          received_at: row.receivedAt,
        })),
      )
      .onConflict((oc) => oc.columns(['source_store_id', 'source_order_id', 'dedupe_key']).doNothing())
      .execute();
  }

  /** Held cancellations whose order a job of their store has now recorded, with that job's id: the oldest first, those that failed before last. */
  async findClaimable(limit: number): Promise<(HeldCancellationRow & { syncJobId: string })[]> {
    const rows = await this.db
      .selectFrom('held_supplier_cancellations as h')
      .innerJoin('sync_jobs as j', (join) => join.onRef('j.source_store_id', '=', 'h.source_store_id').onRef('j.source_order_id', '=', 'h.source_order_id'))
      .selectAll('h')
      .select('j.id as sync_job_id')
      .orderBy(sql`h.claim_failed_at asc nulls first`)
      .orderBy('h.received_at')
      .orderBy('h.id')
      .limit(limit)
      .execute();
    return rows.map((row) => ({ ...heldCancellationOf(row), syncJobId: row.sync_job_id }));
  }

  /** Held cancellations recorded on their job (or found to be the service's own): gone. */
  async deleteHeld(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.deleteFrom('held_supplier_cancellations').where('id', '=', sql<string>`any(${ids}::text[])`).execute();
  }

  /** Held cancellations the sweep failed to record on their job at `at`: kept, behind the others for the next passes. */
  async markKept(ids: string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.db.updateTable('held_supplier_cancellations').set({ claim_failed_at: at }).where('id', '=', sql<string>`any(${ids}::text[])`).execute();
  }

  /**
   * Forgets held cancellations no job can own any more: no job of its store has recorded its order,
   * and no job of its store that existed when it arrived is in doubt any more (it completed with
   * another order, or was ended unplaced and its order looked up): the supplier's own sale. One a job
   * recorded the order of meanwhile is kept (read in this statement), and the next claims take it.
   * Returns how many.
   */
  async forgetUnowned(): Promise<number> {
    const result = await this.db
      .deleteFrom('held_supplier_cancellations as h')
      .where(this.noJobCanOwn('h'))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

}

/** A `held_supplier_cancellations` row as the service works with it (timestamps come back as text: made Dates). */
function heldCancellationOf(row: Selectable<Database['held_supplier_cancellations']>): HeldCancellationRow {
  return {
    id: row.id,
    ownerId: row.owner_id,
    resellerStoreId: row.reseller_store_id,
    sourceStoreId: row.source_store_id,
    sourceOrderId: row.source_order_id,
    dedupeKey: row.dedupe_key,
    reason: row.reason,
    lines: (row.lines as CancelledLine[] | null) ?? null,
    cancelledAt: new Date(row.cancelled_at),
    via: row.via as Record<string, unknown>,
    receivedAt: new Date(row.received_at),
  };
}
