import { randomUUID } from 'node:crypto';
import { fromKysely, PgBoss, type JobInsert, type KyselyTransactionLike, type Queue as QueueDefinition } from 'pg-boss';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Trx } from '../db/sql.ts';

/**
 * A queue: its name, its message schema and its options. A queue message only names the record to
 * move and the message id that record expects; everything else is read from the row.
 */
export interface QueueSpec<M extends object = object> {
  name: string;
  schema: z.ZodType<M, z.ZodTypeDef, unknown>;
  /** For queues of retried work (src/attempts/kind.ts `attemptQueue`): see QUEUE_OPTIONS. */
  retryLimit?: number;
}

/**
 * The queues of runs and of webhook deliveries. Each kind of retried work defines its own queue
 * with the kind (src/<feature>/kind.ts); the composition root hands those to `Queue.start`.
 */
export const QUEUES = {
  reconciliation: {
    name: 'reconciliation.run',
    schema: z.object({ reconciliationId: z.string() }),
  },
  /** One divergence-watch pass over a reseller store and its suppliers (src/divergence-watch/). */
  divergenceWatch: {
    name: 'divergence-watch.pass',
    schema: z.object({ watchPassId: z.string() }),
  },
  /** Sent with `group: {id: endpointId}`, so the deliveries in flight to one endpoint are bounded (src/workers/delivery.worker.ts). */
  webhookDelivery: {
    name: 'webhook.deliver',
    schema: z.object({ deliveryId: z.string() }),
  },
} as const;

export type QueueKey = keyof typeof QUEUES;
export type QueueMessage<K extends QueueKey> = z.infer<(typeof QUEUES)[K]['schema']>;

/** A message to insert: our id, to run now, after `delayMs` or at `startAfter`, in a concurrency group if it has one. */
export interface OutgoingMessage<M> {
  id: string;
  message: M;
  delayMs?: number;
  groupId?: string;
  startAfter?: Date;
}

const nameOf = (queue: QueueKey | QueueSpec): string => (typeof queue === 'string' ? QUEUES[queue].name : queue.name);

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
  /** The queues of the kinds of retried work (src/workers/kinds.ts), created beside QUEUES. */
  queues?: readonly QueueSpec[];
}

/**
 * A message as pg-boss inserts it: our id, to run now, after `delayMs` or at `startAfter` (the
 * database's clock), in a concurrency group if it has one.
 */
function jobInsert(id: string, message: object, delayMs: number, groupId?: string, startAfter?: Date): JobInsert {
  const at = startAfter ?? (delayMs > 0 ? new Date(Date.now() + delayMs) : undefined);
  return { id, data: message, ...(at && { startAfter: at }), ...(groupId !== undefined && { group: { id: groupId } }) };
}

/** SQLSTATE of a session the server ended because it is shutting down. */
const ADMIN_SHUTDOWN = '57P01';

export class Queue {
  /** Set once `stop` began. */
  stopping = false;

  private constructor(
    readonly boss: PgBoss,
    /** Every queue this process created: QUEUES and the kinds'. */
    private readonly names: readonly string[],
  ) {}

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
    const queues: QueueSpec[] = [...(options.queues ?? []), ...Object.values(QUEUES)];
    const queue = new Queue(boss, queues.map(({ name }) => name));
    boss.on('error', (error) => {
      // pg's pool lets a stopping pool go before its sockets have closed, so a connection can still hear
      // the embedded PostgreSQL's own shutdown (stopped right after the queue): not a fault then.
      if (queue.stopping && (error as { code?: string }).code === ADMIN_SHUTDOWN) options.logger.debug({ err: error }, 'queue connection closed by the database shutting down');
      else options.logger.error({ err: error }, 'queue error');
    });
    await boss.start();
    for (const spec of queues) {
      const settings = { ...QUEUE_OPTIONS, ...(spec.retryLimit !== undefined && { retryLimit: spec.retryLimit }) };
      await boss.createQueue(spec.name, settings);
      // createQueue leaves an existing queue as it was: bring its options up to date.
      await boss.updateQueue(spec.name, settings);
    }
    return queue;
  }

  /**
   * Inserts messages in the caller's Kysely transaction, one statement for all of them, so a message
   * exists exactly when the state change that needs it commits. Each message carries the id its row
   * stores, chosen by the caller (`newMessageId`): only that message may move the row.
   */
  async insertIn<K extends QueueKey>(trx: Trx, queue: K, messages: OutgoingMessage<QueueMessage<K>>[]): Promise<void>;
  async insertIn<M extends object>(trx: Trx, queue: QueueSpec<M>, messages: OutgoingMessage<M>[]): Promise<void>;
  async insertIn(trx: Trx, queue: QueueKey | QueueSpec, messages: OutgoingMessage<object>[]): Promise<void> {
    if (messages.length === 0) return;
    const jobs = messages.map(({ id, message, delayMs = 0, groupId, startAfter }) => jobInsert(id, message, delayMs, groupId, startAfter));
    await this.boss.insert(nameOf(queue), jobs, { db: fromKysely(trx as unknown as KyselyTransactionLike) });
  }

  /** Deletes messages no longer needed (a watchdog whose attempt ended) in the caller's Kysely transaction. */
  async discardIn(trx: Trx, queue: QueueKey | QueueSpec, ids: string[]): Promise<void> {
    await this.boss.deleteJob(nameOf(queue), ids, { db: fromKysely(trx as unknown as KyselyTransactionLike) });
  }

  /** Readiness: the queue's tables answer. */
  async ping(): Promise<void> {
    await this.boss.getQueue(this.names[0]!);
  }

  async depth(): Promise<Record<string, number>> {
    const depths: Record<string, number> = {};
    for (const name of this.names) {
      depths[name] = (await this.boss.getQueue(name))?.queuedCount ?? 0;
    }
    return depths;
  }

  stop(timeoutMs = 30_000): Promise<void> {
    this.stopping = true;
    return this.boss.stop({ graceful: true, timeout: timeoutMs });
  }
}
