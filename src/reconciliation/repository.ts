import { abandonExpiredRuns, handBackRun, leaseEnd, renewRun, takeRun, takeTurn } from '../db/locks.ts';
import { sql, type UpdateQueryBuilder, type UpdateResult } from 'kysely';
import { insertAudit, insertAuditOnce, SYSTEM_ACTOR, type AuditRecord } from '../audit-log/repository.ts';
import type { Orm } from '../db/orm.ts';
import type { StoresDue } from './ports.ts';
import type { Database } from '../db/schema.ts';
import { sqlOf, type Db, type Trx } from '../db/sql.ts';
import { newMessageId, type Queue } from '../queue/queue.ts';
import { newId } from '../shared/ids.ts';
import { findPage } from '../db/paging.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import { ReconciliationRun, type ReconciliationStatus } from './entity.ts';

/** A run as a worker takes it. `take` identifies this hold of the run: only it may renew or finish it. */
export interface TakenRun {
  id: string;
  resellerStoreId: string;
  trigger: ReconciliationRun['trigger'];
  requestedSince: Date | null;
  take: number;
  /** Where the listing started (null until a worker started it), and where a handed-back run goes on from (else null). */
  since: Date | null;
  resumeSince: Date | null;
  /** What the run's earlier holds did (a handed-back run goes on counting). */
  ordersSeen: number;
  ordersRouted: number;
}

export interface Watermark {
  watermark: Date;
  reconciledUntil: Date;
}

export interface RunOutcome {
  status: Exclude<ReconciliationStatus, 'running'>;
  ordersSeen: number;
  ordersRouted: number;
  error: string | null;
  /** Where the store's watermark moves on success (never backwards); null leaves it. */
  watermark: Watermark | null;
}

/** What a run a stopping process gives back has done so far (`handBack`). */
export interface HandBack {
  ordersSeen: number;
  ordersRouted: number;
  /** Where the next hold's listing goes on. */
  resumeSince: Date;
  /** Where the store's watermark moves over what was listed (never backwards); null leaves it. */
  watermark: Watermark | null;
}

/** A listed order a run did not route because its webhook would have been refused (400 `validation_failed`). */
export interface Refusal {
  externalOrderId: string;
  reason: string;
  /** The field at fault, as the webhook's 400 names it. */
  param: string;
}

const SCHEDULER_LOCK = 'reconciliation.scheduler';

type RunUpdate = UpdateQueryBuilder<Database, 'reconciliation_runs', 'reconciliation_runs', UpdateResult>;

/** The ORM's connection may read timestamptz as text. */
const dateOf = (value: Date | string) => new Date(value);

/** Every statement on reconciliation_runs and reconciliation_watermarks. */
export class ReconciliationRepository {
  constructor(
    private readonly orm: Orm,
    private readonly queue: Queue,
    private readonly storesDue: StoresDue,
  ) {}

  private get db(): Db {
    return sqlOf(this.orm);
  }

  /**
   * Starts a run of one store, with its queue message, unless one is running (null). A running run
   * whose lease expired was abandoned by a lost process: it is failed first, so it blocks nothing.
   */
  start(
    store: { id: string; ownerId: string },
    trigger: ReconciliationRun['trigger'],
    requestedSince: Date | null,
    queuedLeaseMs: number,
    audit?: (reconciliationId: string) => AuditRecord,
  ): Promise<string | null> {
    return this.db.transaction().execute(async (trx) => {
      await abandonExpiredRuns(trx, 'reconciliation_runs', store.id);
      const [id] = await this.insertRuns(trx, [{ ...store, requestedSince }], trigger, queuedLeaseMs);
      if (id === undefined) return null;
      if (audit) await insertAudit(trx, [audit(id)]);
      return id;
    });
  }

  /**
   * Starts a run for every active store that is due: none running, and none started within
   * `intervalMs` (a new store's first run comes one interval after its creation). One process
   * schedules at a time (a transaction-scoped advisory lock); the others' turns do nothing.
   */
  startDue(intervalMs: number, queuedLeaseMs: number, limit: number): Promise<string[]> {
    return this.db.transaction().execute(async (trx) => {
      if (!(await takeTurn(trx, SCHEDULER_LOCK))) return [];
      await abandonExpiredRuns(trx, 'reconciliation_runs', null);
      const due = await this.storesDue(trx, 'reconciliation_runs', intervalMs, limit);
      const stores = due.map((store) => ({ ...store, requestedSince: null }));
      return this.insertRuns(trx, stores, 'scheduled', queuedLeaseMs);
    });
  }

  /** Inserts running runs and their queue messages; a store with a running run is skipped. */
  private async insertRuns(
    trx: Trx,
    stores: { id: string; ownerId: string; requestedSince: Date | null }[],
    trigger: ReconciliationRun['trigger'],
    queuedLeaseMs: number,
  ): Promise<string[]> {
    if (stores.length === 0) return [];
    const rows = await trx
      .insertInto('reconciliation_runs')
      .values(
        stores.map((store) => ({
          id: newId('reconciliation'),
          owner_id: store.ownerId,
          reseller_store_id: store.id,
          trigger,
          status: 'running',
          requested_since: store.requestedSince,
          since: null,
          orders_seen: 0,
          orders_routed: 0,
          error: null,
          takes: 0,
          lease_expires_at: leaseEnd(queuedLeaseMs),
          // When the run is recorded, not when its transaction began: the scheduler's transaction can
          // begin before the store's previous run finished, and its runs start after that one.
          started_at: sql<Date>`clock_timestamp()`,
          finished_at: null,
        })),
      )
      // The partial unique index allows one running run per store, across every process.
      .onConflict((oc) => oc.column('reseller_store_id').where('status', '=', 'running').doNothing())
      .returning('id')
      .execute();
    const ids = rows.map((row) => row.id);
    await this.queue.insertIn(trx, 'reconciliation', ids.map((id) => ({ id: newMessageId(), message: { reconciliationId: id } })));
    return ids;
  }

  /**
   * Takes a run for this process: one nobody took yet, or one whose process was lost (its lease
   * expired). Null when it finished, or another process holds it (a duplicate queue message).
   */
  async take(id: string, leaseMs: number): Promise<TakenRun | null> {
    type Row = {
      reseller_store_id: string;
      trigger: string;
      requested_since: Date | string | null;
      since: Date | string | null;
      resume_since: Date | string | null;
      orders_seen: number;
      orders_routed: number;
    };
    const row = await takeRun<Row>(this.db, 'reconciliation_runs', id, leaseMs, [
      'reseller_store_id',
      'trigger',
      'requested_since',
      'since',
      'resume_since',
      'orders_seen',
      'orders_routed',
    ]);
    if (!row) return null;
    const orNull = (value: Date | string | null) => (value === null ? null : dateOf(value));
    return {
      id,
      resellerStoreId: row.reseller_store_id,
      trigger: row.trigger as TakenRun['trigger'],
      requestedSince: orNull(row.requested_since),
      take: row.takes,
      since: orNull(row.since),
      resumeSince: orNull(row.resume_since),
      ordersSeen: row.orders_seen,
      ordersRouted: row.orders_routed,
    };
  }

  /** Fails every running run whose lease expired (its process was lost); returns how many. */
  async abandonExpired(): Promise<number> {
    return this.db.transaction().execute((trx) => abandonExpiredRuns(trx, 'reconciliation_runs', null));
  }

  /**
   * The audit entry `order.refused` of each order its webhook would have refused, as that webhook
   * records it, unless the order has one already (its refused webhook, or an earlier run: each run
   * lists the watermark's overlap again). So an order whose webhook was lost and that can never be
   * routed is not skipped silently: the reseller finds it in the audit log.
   */
  async recordRefusals(store: { id: string; ownerId: string }, run: TakenRun, refusals: Refusal[]): Promise<void> {
    if (refusals.length === 0) return;
    const sorted = [...refusals].sort((a, b) => a.externalOrderId.localeCompare(b.externalOrderId));
    await this.db.transaction().execute(async (trx) => {
      for (const refusal of sorted) {
        const record: AuditRecord = {
          ownerId: store.ownerId,
          resellerStoreId: store.id,
          action: 'order.refused',
          resourceType: 'order',
          resourceId: refusal.externalOrderId,
          actorId: SYSTEM_ACTOR,
          metadata: { reason: refusal.reason, param: refusal.param, reconciliationId: run.id },
        };
        await insertAuditOnce(trx, record, `order.refused:${store.id}:${refusal.externalOrderId}`);
      }
    });
  }

  /** Extends this hold of the run; false when the run is no longer this process's. */
  renew(run: TakenRun, leaseMs: number): Promise<boolean> {
    return renewRun(this.db, 'reconciliation_runs', run, leaseMs);
  }

  /** Records where the listing starts and how far it got, for GET …/reconciliations while it runs. */
  async progress(run: TakenRun, since: Date, ordersSeen: number, ordersRouted: number): Promise<void> {
    await this.heldBy(
      run,
      this.db.updateTable('reconciliation_runs').set({ since, orders_seen: ordersSeen, orders_routed: ordersRouted }),
    ).execute();
  }

  /**
   * Ends this hold of the run with its outcome and, on success, moves the store's watermark forward
   * (never back), in one transaction. False when the run was no longer this process's.
   */
  finish(run: TakenRun, outcome: RunOutcome): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const finished = await this.heldBy(
        run,
        trx.updateTable('reconciliation_runs').set({
          status: outcome.status,
          finished_at: sql<Date>`now()`,
          orders_seen: outcome.ordersSeen,
          orders_routed: outcome.ordersRouted,
          error: outcome.error,
        }),
      ).executeTakeFirst();
      if (finished.numUpdatedRows !== 1n) return false;
      if (outcome.status === 'succeeded' && outcome.watermark) await this.advanceWatermark(trx, run.resellerStoreId, outcome.watermark);
      return true;
    });
  }

  /**
   * Gives this hold of the run back, still `running`, for another process to go on with at once (this
   * one is stopping): its counts and where its listing goes on are kept, the store's watermark moves
   * over what it listed, and a new queue message brings it to the next worker, all in one transaction.
   * Unless a worker takes it within `queuedLeaseMs` it is failed as abandoned, as a requested run is.
   * False when the run was no longer this process's.
   */
  handBack(run: TakenRun, handBack: HandBack, queuedLeaseMs: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const kept = await this.heldBy(
        run,
        trx.updateTable('reconciliation_runs').set({ orders_seen: handBack.ordersSeen, orders_routed: handBack.ordersRouted, resume_since: handBack.resumeSince }),
      ).executeTakeFirst();
      if (kept.numUpdatedRows !== 1n || !(await handBackRun(trx, 'reconciliation_runs', run, queuedLeaseMs))) return false;
      if (handBack.watermark) await this.advanceWatermark(trx, run.resellerStoreId, handBack.watermark);
      await this.queue.insertIn(trx, 'reconciliation', [{ id: newMessageId(), message: { reconciliationId: run.id } }]);
      return true;
    });
  }

  /** Moves the store's watermark forward (never back). */
  private async advanceWatermark(trx: Trx, resellerStoreId: string, { watermark, reconciledUntil }: Watermark): Promise<void> {
    await trx
      .insertInto('reconciliation_watermarks')
      .values({ reseller_store_id: resellerStoreId, watermark, reconciled_until: reconciledUntil, updated_at: sql<Date>`now()` })
      .onConflict((oc) =>
        oc.column('reseller_store_id').doUpdateSet({
          watermark: sql<Date>`greatest(reconciliation_watermarks.watermark, excluded.watermark)`,
          reconciled_until: sql<Date>`greatest(reconciliation_watermarks.reconciled_until, excluded.reconciled_until)`,
          updated_at: sql<Date>`now()`,
        }),
      )
      .execute();
  }

  /** An update of the run, only while this hold of it is current. */
  private heldBy(run: TakenRun, update: RunUpdate): RunUpdate {
    return update.where('id', '=', run.id).where('status', '=', 'running').where('takes', '=', run.take);
  }

  async watermarkOf(resellerStoreId: string): Promise<Watermark | null> {
    const row = await this.db
      .selectFrom('reconciliation_watermarks')
      .select(['watermark', 'reconciled_until'])
      .where('reseller_store_id', '=', resellerStoreId)
      .executeTakeFirst();
    return row ? { watermark: dateOf(row.watermark), reconciledUntil: dateOf(row.reconciled_until) } : null;
  }

  list(ownerId: string, resellerStoreId: string, page: PageQuery): Promise<Page<ReconciliationRun>> {
    return findPage(this.orm.em, ReconciliationRun, { ownerId, resellerStoreId }, page);
  }

  /** Seconds since each active store was last reconciled up to (its creation when never). */
  async lagByStore(): Promise<{ resellerStoreId: string; lagSeconds: number }[]> {
    const rows = await this.db
      .selectFrom('reseller_stores as s')
      .leftJoin('reconciliation_watermarks as w', 'w.reseller_store_id', 's.id')
      .select(['s.id', sql<number | string>`greatest(0, extract(epoch from now() - coalesce(w.reconciled_until, s.created_at)))::float8`.as('lag_seconds')])
      .where('s.deleted_at', 'is', null)
      .execute();
    return rows.map((row) => ({ resellerStoreId: row.id, lagSeconds: Number(row.lag_seconds) }));
  }
}
