import { randomUUID } from 'node:crypto';
import { fromKysely, PgBoss, type JobInsert, type KyselyTransactionLike, type Queue as QueueDefinition } from 'pg-boss';
import type { Logger } from 'pino';
import { z } from 'zod';
import { MAX_AUTO_RETRIES } from '../../machines/attempt.machine.ts';
import type { Trx } from '../db/sql.ts';

/**
 * Every queue, its message schema and its options in one place. A queue message only names the
 * record to move and the message id that record expects; everything else is read from the row.
 */
/**
 * `turnAt`: the message was postponed to a turn reserved for its row's platform calls
 * (src/attempts/pacing.ts); the worker spends that turn instead of reserving another.
 */
const turnAt = z.string().datetime({ offset: true }).optional();

export const QUEUES = {
  syncJob: {
    name: 'sync-job.process',
    schema: z.object({ syncJobId: z.string(), turnAt }),
    retryLimit: MAX_AUTO_RETRIES,
  },
  fulfillment: {
    name: 'fulfillment.propagate',
    schema: z.object({ fulfillmentId: z.string(), turnAt }),
    retryLimit: MAX_AUTO_RETRIES,
  },
  cancellation: {
    name: 'cancellation.process',
    schema: z.object({ cancellationId: z.string(), turnAt }),
    retryLimit: MAX_AUTO_RETRIES,
  },
  reconciliation: {
    name: 'reconciliation.run',
    schema: z.object({ reconciliationId: z.string() }),
  },
  /** Sent with `group: {id: endpointId}`, so the deliveries in flight to one endpoint are bounded (src/workers/delivery.worker.ts). */
  webhookDelivery: {
    name: 'webhook.deliver',
    schema: z.object({ deliveryId: z.string() }),
  },
} as const;

export type QueueKey = keyof typeof QUEUES;
export type QueueMessage<K extends QueueKey> = z.infer<(typeof QUEUES)[K]['schema']>;

/** Queue message ids are chosen before the insert, so the row that expects one can store it in the same transaction. */
export const newMessageId = (): string => randomUUID();

/**
 * Business retries are scheduled by the lifecycle machines as new messages; pg-boss's own retries
 * only cover a worker that died or lost its database mid-message (the heartbeat lapses and the
 * same message is delivered again), or an outcome that could not be recorded. A queue of retried
 * work (`retryLimit` above) allows as many redeliveries as the policy allows retries, and each
 * counts the lost attempt as failed (LOSE), so a message is never delivered more often than the
 * policy allows attempts; a message pg-boss gives up on leaves its row to the sweep
 * (src/attempts/sweep.ts), which moves it to dead (`delivery_exhausted`).
 */
const QUEUE_OPTIONS: Omit<QueueDefinition, 'name'> = {
  retryLimit: 20,
  retryDelay: 1,
  retryBackoff: true,
  retryDelayMax: 60,
  heartbeatSeconds: 10,
  expireInSeconds: 15 * 60,
  deleteAfterSeconds: 24 * 60 * 60,
  // No NOTIFY on insert: PostgreSQL serialises the commits of notifying transactions on one global
  // lock held through the commit's WAL flush, which capped webhook ingest (measured: ~1 session
  // always waiting on it at 370 orders/s). Idle workers poll every 0.5 s instead; busy ones fetch
  // the next message as soon as they finish one (workers/index.ts).
  notify: false,
};

export interface QueueOptions {
  connectionString: string;
  logger: Logger;
  /** Run pg-boss maintenance (expiry, retention); only processes that run workers need it. */
  supervise: boolean;
  /** pg-boss's own connections (fetch, complete, maintenance); 5 held a busy worker's batches back. */
  poolMax?: number;
}

/**
 * A message as pg-boss inserts it: our id, to run now, after `delayMs` or at `startAfter` (the
 * database's clock), in a concurrency group if it has one.
 */
function jobInsert(id: string, message: object, delayMs: number, groupId?: string, startAfter?: Date): JobInsert {
  const at = startAfter ?? (delayMs > 0 ? new Date(Date.now() + delayMs) : undefined);
  return { id, data: message, ...(at && { startAfter: at }), ...(groupId !== undefined && { group: { id: groupId } }) };
}

export class Queue {
  private constructor(readonly boss: PgBoss) {}

  static async start(options: QueueOptions): Promise<Queue> {
    const boss = new PgBoss({
      connectionString: options.connectionString,
      schema: 'pgboss',
      max: options.poolMax ?? 10,
      supervise: options.supervise,
      // A message whose worker died (crash, lost database) is failed and redelivered by the supervisor
      // once its heartbeat (10 s) lapses. pg-boss supervises every 60 s by default, which kept such
      // orders waiting over a minute after a restart or an outage; every 10 s bounds it near 20 s.
      superviseIntervalSeconds: 10,
      monitorIntervalSeconds: 10,
      schedule: false,
      migrate: true,
      useListenNotify: false,
      application_name: 'order-routing-queue',
    });
    boss.on('error', (error) => options.logger.error({ err: error }, 'queue error'));
    await boss.start();
    for (const queue of Object.values(QUEUES)) {
      const options = { ...QUEUE_OPTIONS, ...('retryLimit' in queue && { retryLimit: queue.retryLimit }) };
      await boss.createQueue(queue.name, options);
      // createQueue leaves an existing queue as it was: bring its options up to date.
      await boss.updateQueue(queue.name, options);
    }
    return new Queue(boss);
  }

  /**
   * Inserts messages in the caller's Kysely transaction, one statement for all of them, so a message
   * exists exactly when the state change that needs it commits. Each message carries the id its row
   * stores, chosen by the caller (`newMessageId`): only that message may move the row.
   */
  async insertIn<K extends QueueKey>(
    trx: Trx,
    key: K,
    messages: { id: string; message: QueueMessage<K>; delayMs?: number; groupId?: string; startAfter?: Date }[],
  ): Promise<void> {
    if (messages.length === 0) return;
    const jobs = messages.map(({ id, message, delayMs = 0, groupId, startAfter }) => jobInsert(id, message, delayMs, groupId, startAfter));
    await this.boss.insert(QUEUES[key].name, jobs, { db: fromKysely(trx as unknown as KyselyTransactionLike) });
  }

  /** Deletes messages no longer needed (a watchdog whose attempt ended) in the caller's Kysely transaction. */
  async discardIn<K extends QueueKey>(trx: Trx, key: K, ids: string[]): Promise<void> {
    await this.boss.deleteJob(QUEUES[key].name, ids, { db: fromKysely(trx as unknown as KyselyTransactionLike) });
  }

  /** Readiness: the queue's tables answer. */
  async ping(): Promise<void> {
    await this.boss.getQueue(QUEUES.syncJob.name);
  }

  async depth(): Promise<Record<string, number>> {
    const depths: Record<string, number> = {};
    for (const queue of Object.values(QUEUES)) {
      depths[queue.name] = (await this.boss.getQueue(queue.name))?.queuedCount ?? 0;
    }
    return depths;
  }

  stop(timeoutMs = 30_000): Promise<void> {
    return this.boss.stop({ graceful: true, timeout: timeoutMs });
  }
}
