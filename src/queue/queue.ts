import { randomUUID } from 'node:crypto';
import type { EntityManager, EventManager, EventSubscriber, TransactionEventArgs } from '@mikro-orm/postgresql';
import type { Transaction } from 'kysely';
import { fromKysely, PgBoss, type JobInsert, type KyselyTransactionLike, type Queue as QueueDefinition } from 'pg-boss';
import type { Logger } from 'pino';
import { z } from 'zod';

/**
 * Every queue, its message schema and its options in one place. A queue message only names the
 * record to move and the message id that record expects; everything else is read from the row.
 */
export const QUEUES = {
  syncJob: {
    name: 'sync-job.process',
    schema: z.object({ syncJobId: z.string() }),
  },
  fulfillment: {
    name: 'fulfillment.propagate',
    schema: z.object({ fulfillmentId: z.string() }),
  },
} as const;

export type QueueKey = keyof typeof QUEUES;
export type QueueMessage<K extends QueueKey> = z.infer<(typeof QUEUES)[K]['schema']>;

/** Queue message ids are chosen before the insert, so the row that expects one can store it in the same transaction. */
export const newMessageId = (): string => randomUUID();

/**
 * Business retries are scheduled by the lifecycle machines as new messages; pg-boss's own retries
 * only cover a worker that died or lost its database mid-message (the heartbeat lapses and the
 * same message is delivered again).
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

/** A message as pg-boss inserts it: our id, to run now or after `delayMs`. */
function jobInsert(id: string, message: object, delayMs: number): JobInsert {
  return { id, data: message, ...(delayMs > 0 && { startAfter: new Date(Date.now() + delayMs) }) };
}

export class Queue {
  /** Inserts a committing transaction's buffered messages; registered with the ORM by `attach`. */
  readonly #flusher: EventSubscriber = {
    beforeTransactionCommit: async ({ transaction }: TransactionEventArgs) => {
      const byQueue = transaction && this.#buffered.get(transaction);
      if (!byQueue) return;
      this.#buffered.delete(transaction);
      const db = fromKysely(transaction as unknown as KyselyTransactionLike);
      for (const [name, jobs] of byQueue) await this.boss.insert(name, jobs, { db });
    },
  };
  /** Messages enqueued in a transaction not committed yet, by transaction, then by queue name. */
  readonly #buffered = new WeakMap<object, Map<string, JobInsert[]>>();

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
      await boss.createQueue(queue.name, QUEUE_OPTIONS);
      // createQueue leaves an existing queue as it was: bring its options up to date.
      await boss.updateQueue(queue.name, QUEUE_OPTIONS);
    }
    return new Queue(boss);
  }

  /**
   * Enqueues inside the caller's ORM transaction, so the message exists exactly when the state
   * change that needs it commits, to run now or after `delayMs`. Returns the new message's id, which
   * the caller stores on its row: only that message may move the row, so older ones become stale.
   *
   * With the ORM attached (`attach`), messages are buffered and inserted just before the
   * transaction commits, in it, one statement per queue: an order routed to several suppliers
   * costs one insert instead of one per job. Otherwise each is inserted at once.
   */
  async enqueue<K extends QueueKey>(em: EntityManager, key: K, message: QueueMessage<K>, delayMs = 0): Promise<string> {
    const id = newMessageId();
    const job = jobInsert(id, message, delayMs);
    const trx = em.getTransactionContext<KyselyTransactionLike>();
    if (!trx) throw new Error('enqueue must run inside a transaction');
    // Transactions run on forks whose event managers are copies: look for the subscriber itself.
    if (!em.getEventManager().getSubscribers().has(this.#flusher)) {
      await this.boss.insert(QUEUES[key].name, [job], { db: fromKysely(trx) });
      return id;
    }
    let byQueue = this.#buffered.get(trx);
    if (!byQueue) this.#buffered.set(trx, (byQueue = new Map()));
    const jobs = byQueue.get(QUEUES[key].name);
    if (jobs) jobs.push(job);
    else byQueue.set(QUEUES[key].name, [job]);
    return id;
  }

  /**
   * Inserts messages in a Kysely transaction (the SQL hot paths), one statement for all of them.
   * Each message carries the id its row stores, chosen by the caller (`newMessageId`).
   */
  async insertIn<K extends QueueKey>(trx: Transaction<unknown>, key: K, messages: { id: string; message: QueueMessage<K>; delayMs?: number }[]): Promise<void> {
    if (messages.length === 0) return;
    const jobs = messages.map(({ id, message, delayMs = 0 }) => jobInsert(id, message, delayMs));
    await this.boss.insert(QUEUES[key].name, jobs, { db: fromKysely(trx as unknown as KyselyTransactionLike) });
  }

  /**
   * Makes the ORM's transactions insert the messages enqueued in them just before they commit.
   * Call it before any transaction starts: a transaction's fork copies the subscribers it sees.
   */
  attach(events: EventManager): void {
    events.registerSubscriber(this.#flusher);
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
