import type { Job, PgBoss } from 'pg-boss';
import type { AppContext } from '../context.ts';
import { QUEUES, type QueueKey, type QueueMessage } from '../queue/queue.ts';
import { fulfillmentWorker } from './fulfillment.worker.ts';
import { syncJobWorker } from './sync-job.worker.ts';

/** Every worker takes one message at a time and, when its queue is empty, polls every 0.5 s (pg-boss's floor). */
export const WORK_OPTIONS = { batchSize: 1, localConcurrency: 1, pollingIntervalSeconds: 0.5 } as const;

/**
 * Consumes a queue with `concurrency` workers (exported so the benchmark's bare pg-boss baseline
 * consumes the same way). pg-boss waits its polling interval after every message, so a backlog
 * would drain at two messages per second per worker. Each worker is registered on its own, so its
 * handler knows its id and wakes it: after a message is handled the worker fetches the next at
 * once, and only an empty fetch, or a failure, makes it wait.
 */
export async function consume(boss: PgBoss, name: string, concurrency: number, handle: (job: Job<unknown>) => Promise<void>): Promise<void> {
  for (let i = 0; i < concurrency; i++) {
    let workerId: string | undefined;
    workerId = await boss.work(name, WORK_OPTIONS, async ([job]: Job<unknown>[]) => {
      if (!job) return;
      await handle(job);
      if (workerId) boss.notifyWorker(workerId);
    });
  }
}

type Handlers = { [K in QueueKey]: (messageId: string, message: QueueMessage<K>) => Promise<void> };

/**
 * Subscribes a handler to every queue. The mapped type makes a queue without a handler a compile
 * error, and the check below makes it a start-up error too. A handler that throws (e.g. the
 * database went away) leaves the message to pg-boss, which delivers it again.
 */
export async function startWorkers(ctx: AppContext): Promise<void> {
  const syncJobs = syncJobWorker(ctx);
  const fulfillments = fulfillmentWorker(ctx);
  const handlers: Handlers = {
    syncJob: (id, message) => syncJobs.handle(id, message.syncJobId),
    fulfillment: (id, message) => fulfillments.handle(id, message.fulfillmentId),
  };

  for (const key of Object.keys(QUEUES) as QueueKey[]) {
    const handler = handlers[key] as (id: string, message: unknown) => Promise<void>;
    if (!handler) throw new Error(`queue ${QUEUES[key].name} has no handler`);
    const { name, schema } = QUEUES[key];
    await consume(ctx.queue.boss, name, ctx.config.workerConcurrency, async (job) => {
      const parsed = schema.safeParse(job.data);
      if (!parsed.success) {
        ctx.logger.error({ queue: name, message_id: job.id }, 'malformed queue message dropped');
        return;
      }
      try {
        await handler(job.id, parsed.data);
      } catch (error) {
        ctx.logger.error({ err: error, queue: name, message_id: job.id }, 'queue handler failed; pg-boss will redeliver');
        throw error;
      }
    });
  }
}
