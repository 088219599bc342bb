import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { fromKysely, PgBoss, type Job, type JobInsert, type KyselyTransactionLike, type Queue as QueueDefinition } from 'pg-boss';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Db, Trx } from '../db/sql.ts';
import { analyzeJobTable, deferMessages, settleMessages } from './repository.ts';
import type { Pool } from 'pg';
import { POOL_OPTIONS } from '../db/pool.ts';
import { PREPARED_MARK, preparedName } from '../db/prepared.ts';
import { IdleLoops } from './idle-loops.ts';

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

/** A message whose heartbeat is older than this is taken to have lost its worker (see QUEUE_OPTIONS). */
const HEARTBEAT_SECONDS = 10;

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
  heartbeatSeconds: HEARTBEAT_SECONDS,
  expireInSeconds: 15 * 60,
  deleteAfterSeconds: 24 * 60 * 60,
  // No NOTIFY on insert: PostgreSQL serialises the commits of notifying transactions on one global
  // lock held through the commit's WAL flush, which capped webhook ingest (measured: ~1 session
  // always waiting on it at 370 orders/s). Idle workers poll instead: the queues of retried work
  // every `SettlingOptions.idlePollMs`, the delivery and run queues every 0.5 s (workers/index.ts);
  // busy ones fetch the next message as soon as they finish one.
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

/**
 * A settling consumer: one loop per entry of `batchSizes`. While its queue is empty one loop polls
 * every `idlePollMs` (a new message waits about that long; each poll is one prepared fetch of an
 * empty index range) and the others are parked (src/queue/idle-loops.ts).
 */
export interface SettlingOptions {
  batchSizes: number[];
  idlePollMs: number;
  logger: Logger;
}

/** A parked loop polls on its own this rarely (it is woken when there is work). */
const PARKED_POLL_MS = 5_000;

/** A settling consumer that cannot fetch tries again after this long. */
const FETCH_RETRY_MS = 500;

/** While a settling consumer has a backlog (its fetches come back full), its job table's statistics are refreshed at most this often. */
const STATISTICS_REFRESH_MS = 30_000;

/** While a queue's fetches fail, at most one log line per this long (`#fetchFailed`). */
const FETCH_FAILURE_LOG_MS = 30_000;

/**
 * A settling consumer's handler: it settles each message of its batch itself (`settleIn`, or
 * `settledMessagesStep` inside a statement of its own), in the transaction that records what the
 * message did, and returns the ids of those it could not: they are failed, so pg-boss delivers
 * them again. A handler that throws has the whole batch failed (settled messages stay settled).
 */
export type SettlingHandler = (jobs: Job<unknown>[]) => Promise<ReadonlySet<string>>;

/** SQLSTATE of a statement the database user may not run (here: ANALYZE of pg-boss's tables). */
const INSUFFICIENT_PRIVILEGE = '42501';

/** SQLSTATE of a session the server ended because it is shutting down. */
const ADMIN_SHUTDOWN = '57P01';

export class Queue {
  /** Set once `stop` began. */
  stopping = false;
  /** The loops of the settling consumers (`consumeSettling`), each resolving once it stopped. */
  readonly #loops: Promise<void>[] = [];
  /** The idle loops of each settling consumer (one per queue and process), by queue name: woken by `wakeAt`, and at `stop`. */
  readonly #idleByQueue = new Map<string, IdleLoops>();
  /** When each job table's statistics were last refreshed (`#freshenStatistics`), by queue name; null once refused. */
  readonly #analyzedAt = new Map<string, number | null>();
  /** Queues whose fetches are failing: since when, when that was last logged, and how many failed (`#fetchFailed`). */
  readonly #fetchFailures = new Map<string, { since: number; loggedAt: number; failures: number }>();

  /**
   * The settling consumers fetch through this: pg-boss's own pool, each fetch a named prepared
   * statement. A fetch's text is fixed per queue and batch size and has no parameters, and planning
   * it cost more than running it (measured in the processing drain: 0.45 ms of planning against 0.34
   * of execution a call), so it is planned once per connection and whenever the job table's
   * statistics change (`#freshenStatistics` refreshes them while a backlog lasts).
   */
  readonly #fetchDb = {
    executeSql: (text: string, values: unknown[] = []) => {
      const db = this.boss.getDb() as { pool?: Pool; executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> };
      const name = preparedName(text);
      // Plain pg-boss when its database is not its own pg pool.
      return db.pool && name !== undefined ? db.pool.query({ name, text, values }) : db.executeSql(text, values);
    },
  };

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
      // Passed through to its pg pool: the prepared fetches' plans (#fetchDb) are no older than the ORM's.
      ...({ maxLifetimeSeconds: POOL_OPTIONS.maxLifetimeSeconds } as object),
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
    // Prepared (src/db/prepared.ts): pg-boss's insert is one statement whose text is fixed per queue, and
    // planning it cost half as much as running it on the routing's hot path (0.33 against 0.65 ms a call).
    const db = fromKysely(trx as unknown as KyselyTransactionLike);
    await this.boss.insert(nameOf(queue), jobs, { db: { executeSql: (text: string, values?: unknown[]) => db.executeSql(`${text} ${PREPARED_MARK}`, values) } });
  }

  /** Deletes messages no longer needed (a watchdog whose attempt ended) in the caller's Kysely transaction. */
  async discardIn(trx: Trx, queue: QueueKey | QueueSpec, ids: string[]): Promise<void> {
    await this.boss.deleteJob(nameOf(queue), ids, { db: fromKysely(trx as unknown as KyselyTransactionLike) });
  }

  /** Puts off messages not delivered yet (src/queue/repository.ts `deferMessages`): each starts `delayMs` from now. */
  async defer(db: Db, queue: QueueKey | QueueSpec, messages: { id: string; delayMs: number }[]): Promise<void> {
    await deferMessages(db, nameOf(queue), messages);
  }

  /**
   * Messages this process inserted start at `at` (postponed to a turn): its consumer of the queue, if
   * it runs one, fetches then rather than at its next idle poll (src/queue/idle-loops.ts `wakeAt`).
   */
  wakeAt(queue: QueueKey | QueueSpec, at: Date): void {
    this.#idleByQueue.get(nameOf(queue))?.wakeAt(at.getTime());
  }

  /** Settles messages (src/queue/repository.ts `settledMessagesStep`) in the caller's Kysely transaction. */
  async settleIn(trx: Db | Trx, queue: QueueKey | QueueSpec, ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await settleMessages(trx, nameOf(queue), ids);
  }

  /**
   * Consumes a queue with one loop per entry of `batchSizes`, each fetching batches of up to that many, with a
   * handler that settles its messages itself (`SettlingHandler`) instead of pg-boss completing
   * them in a statement and a commit of their own after the batch. A loop fetches its next batch
   * as soon as one is handled; while the queue is empty one loop polls every `idlePollMs` and the
   * others wait to be woken (`IdleLoops`). While a batch runs its messages' heartbeat is kept
   * (pg-boss's supervisor redelivers a message whose heartbeat lapses: its worker died). `stop`
   * waits for the batches in flight.
   */
  consumeSettling(queue: QueueSpec, { batchSizes, idlePollMs, logger }: SettlingOptions, handle: SettlingHandler): void {
    const idle = new IdleLoops({ scoutPollMs: idlePollMs, parkedPollMs: PARKED_POLL_MS });
    if (this.#idleByQueue.has(queue.name)) throw new Error(`queue ${queue.name} already has a settling consumer in this process`);
    this.#idleByQueue.set(queue.name, idle);
    for (const batchSize of batchSizes) this.#loops.push(this.#settlingLoop(queue.name, batchSize, idle, logger, handle));
  }

  async #settlingLoop(name: string, batchSize: number, idle: IdleLoops, logger: Logger, handle: SettlingHandler): Promise<void> {
    const loop = idle.loop();
    while (!this.stopping) {
      let jobs: Job<unknown>[];
      try {
        jobs = await this.boss.fetch(name, { batchSize, db: this.#fetchDb });
        this.#fetchSucceeded(name, logger);
      } catch (error) {
        if (!this.stopping) this.#fetchFailed(name, error, logger);
        await idle.pause(FETCH_RETRY_MS);
        continue;
      }
      if (jobs.length === 0) {
        await idle.waitAfterEmptyFetch(loop);
        continue;
      }
      const full = jobs.length === batchSize;
      idle.fetched(loop, full);
      if (full) this.#freshenStatistics(name, logger);
      await this.#handleBatch(name, jobs, logger, handle);
    }
  }

  async #handleBatch(name: string, jobs: Job<unknown>[], logger: Logger, handle: SettlingHandler): Promise<void> {
    // Fenced on the attempt fetched (pg-boss's retry count), so a claim another worker holds by now is left alone.
    const claims = jobs.map(({ id, retryCount }) => ({ id, retryCount }));
    const heartbeat = setInterval(() => {
      this.boss.touch(name, claims).catch((error: unknown) => logger.warn({ err: error, queue: name }, 'queue heartbeat failed'));
    }, (HEARTBEAT_SECONDS * 1000) / 2);
    try {
      const unsettled = await handle(jobs);
      const failed = claims.filter(({ id }) => unsettled.has(id));
      if (failed.length > 0) await this.boss.fail(name, failed);
    } catch (error) {
      // Messages the handler settled before it threw stay settled: pg-boss's fail leaves those alone.
      await this.boss.fail(name, claims, { message: error instanceof Error ? error.message : String(error) }).catch((failError: unknown) =>
        logger.error({ err: failError, queue: name }, 'batch not failed back; its messages are delivered again once their heartbeat lapses'),
      );
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * A queue's fetches failing (the database is away): the first failure is logged at once, then one
   * line per FETCH_FAILURE_LOG_MS while they go on, rather than one per loop and try (eight loops
   * trying every 0.5 s made 16 lines a second per queue), and one line when a fetch succeeds again.
   */
  #fetchFailed(name: string, error: unknown, logger: Logger): void {
    const now = Date.now();
    const failing = this.#fetchFailures.get(name);
    if (failing === undefined) {
      this.#fetchFailures.set(name, { since: now, loggedAt: now, failures: 1 });
      logger.error({ err: error, queue: name }, 'queue fetch failed; trying again');
      return;
    }
    failing.failures += 1;
    if (now - failing.loggedAt < FETCH_FAILURE_LOG_MS) return;
    failing.loggedAt = now;
    logger.error({ err: error, queue: name, failures: failing.failures, failing_for_ms: now - failing.since }, 'queue fetch still failing; trying again');
  }

  #fetchSucceeded(name: string, logger: Logger): void {
    const failing = this.#fetchFailures.get(name);
    if (failing === undefined) return;
    this.#fetchFailures.delete(name);
    logger.warn({ queue: name, failures: failing.failures, failed_for_ms: Date.now() - failing.since }, 'queue fetch works again');
  }

  /**
   * A full batch means a backlog, which the job table's statistics may not know of yet (they are
   * refreshed by autovacuum only after a tenth of the table changed, and a minute apart at best):
   * pg-boss's fetch is then planned as a sort of the whole backlog. So while a backlog lasts, this
   * process refreshes them itself, at most every STATISTICS_REFRESH_MS, in the background. A
   * database user that may not analyse pg-boss's tables is told once, and the queue works on as before.
   */
  #freshenStatistics(name: string, logger: Logger): void {
    const last = this.#analyzedAt.get(name);
    if (last === null || (last !== undefined && Date.now() - last < STATISTICS_REFRESH_MS)) return;
    this.#analyzedAt.set(name, Date.now());
    void (async () => {
      const table = (await this.boss.getQueue(name))?.table;
      if (table) await analyzeJobTable(this.boss.getDb(), table);
    })().catch((error: unknown) => {
      if (this.stopping) return;
      const refused = (error as { code?: string }).code === INSUFFICIENT_PRIVILEGE;
      if (refused) this.#analyzedAt.set(name, null);
      logger.warn({ err: error, queue: name }, `the queue's statistics could not be refreshed${refused ? ' (not tried again)' : ''}; a backlog is fetched more slowly`);
    });
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

  /** Stops fetching, waits for the batches in flight (up to `timeoutMs`), then stops pg-boss. */
  async stop(timeoutMs = 30_000): Promise<void> {
    this.stopping = true;
    for (const idle of this.#idleByQueue.values()) idle.stop();
    const timeout = new AbortController();
    await Promise.race([Promise.all(this.#loops), delay(timeoutMs, undefined, { signal: timeout.signal }).catch(() => {})]);
    timeout.abort();
    await this.boss.stop({ graceful: true, timeout: timeoutMs });
  }
}
