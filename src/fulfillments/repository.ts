import { sql } from 'kysely';
import { writeAttemptTransitions, type AttemptWrite } from '../attempts/repository.ts';
import type { Orm } from '../db/orm.ts';
import { sqlOf, type Db, type Trx } from '../db/sql.ts';
import { Fulfillment } from './entity.ts';

/** Every statement on fulfillments. */
export class FulfillmentRepository {
  constructor(private readonly orm: Orm) {}

  private get db(): Db {
    return sqlOf(this.orm);
  }

  async findByIds(ids: string[]): Promise<Fulfillment[]> {
    return this.orm.em.fork().find(Fulfillment, { id: { $in: ids } });
  }

  /** A job's fulfillments, oldest first. */
  listForJob(syncJobId: string): Promise<Fulfillment[]> {
    return this.orm.em.find(Fulfillment, { syncJobId }, { orderBy: { id: 'asc' } });
  }

  /**
   * The job's fulfillment with this dedupe key, read after taking an advisory lock on the pair for
   * the rest of the transaction: concurrent deliveries of one event see each other's insert.
   */
  async lockAndFind(trx: Trx, syncJobId: string, dedupeKey: string): Promise<Fulfillment | null> {
    await sql`select pg_advisory_xact_lock(hashtext(${`fulfillment:${syncJobId}:${dedupeKey}`}))`.execute(trx);
    const row = await trx.selectFrom('fulfillments').selectAll().where('sync_job_id', '=', syncJobId).where('dedupe_key', '=', dedupeKey).executeTakeFirst();
    return row ? this.orm.em.fork().map(Fulfillment, row as Record<string, unknown>) : null;
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
    return writeAttemptTransitions(db, 'fulfillments', 'reseller_fulfillment_id', writes);
  }

  transaction<T>(work: (trx: Trx) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(work);
  }
}
