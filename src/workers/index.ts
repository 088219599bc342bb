import type { Job, PgBoss } from 'pg-boss';
import type { AppContext } from '../context.ts';
import { QUEUES, type QueueKey, type QueueMessage } from '../queue/queue.ts';
import { fulfillmentWorker } from './fulfillment.worker.ts';
import { syncJobWorker } from './sync-job.worker.ts';

/**
 * A worker fetches up to this many messages at once and works on them together: one fetch, one
 * read, one take and one completion for the batch instead of one each per message. Each database
 * round trip costs the service and PostgreSQL far more CPU than the statement itself.
 */
export const BATCH_SIZE = 8;

/** When its queue is empty a worker polls every 0.5 s (pg-boss's floor). */
const POLLING_INTERVAL_SECONDS = 0.5;

/**
 * Consumes a queue with `concurrency` messages in flight, in batches of up to BATCH_SIZE (exported
 * so the benchmark's bare pg-boss baseline consumes the same way). pg-boss waits its polling
 * interval after every batch, so a backlog would drain at one batch per worker every 0.5 s. Each
 * worker is registered on its own, so its handler knows its id and wakes it: after a batch is
 * handled the worker fetches the next at once, and only an empty fetch, or a failure, makes it wait.
 */
export async function consume(boss: PgBoss, name: string, concurrency: number, handle: (jobs: Job<unknown>[]) => Promise<void>): Promise<void> {
  const workers = Math.ceil(concurrency / BATCH_SIZE);
  for (let i = 0; i < workers; i++) {
    // `concurrency` shared out exactly: 12 is batches of 6 and 6, not 8 and 8.
    const batchSize = Math.floor(concurrency / workers) + (i < concurrency % workers ? 1 : 0);
    let workerId: string | undefined;
    workerId = await boss.work(name, { batchSize, localConcurrency: 1, pollingIntervalSeconds: POLLING_INTERVAL_SECONDS }, async (jobs: Job<unknown>[]) => {
      if (jobs.length === 0) return;
      await handle(jobs);
      if (workerId) boss.notifyWorker(workerId);
    });
  }
}

type Handlers = { [K in QueueKey]: (messages: { id: string; data: QueueMessage<K> }[]) => Promise<void> };

/**
 * Subscribes a handler to every queue. The mapped type makes a queue without a handler a compile
 * error, and the check below makes it a start-up error too. A handler that throws (e.g. the
 * database went away) leaves the message to pg-boss, which delivers it again.
 */
export async function startWorkers(ctx: AppContext): Promise<void> {
  const syncJobs = syncJobWorker(ctx);
  const fulfillments = fulfillmentWorker(ctx);
  const handlers: Handlers = {
    syncJob: (messages) => syncJobs.handle(messages.map(({ id, data }) => ({ messageId: id, rowId: data.syncJobId }))),
    fulfillment: (messages) => fulfillments.handle(messages.map(({ id, data }) => ({ messageId: id, rowId: data.fulfillmentId }))),
  };

  for (const key of Object.keys(QUEUES) as QueueKey[]) {
    const handler = handlers[key] as (messages: { id: string; data: unknown }[]) => Promise<void>;
    if (!handler) throw new Error(`queue ${QUEUES[key].name} has no handler`);
    const { name, schema } = QUEUES[key];
    await consume(ctx.queue.boss, name, ctx.config.workerConcurrency, async (jobs) => {
      const messages = jobs.flatMap((job) => {
        const parsed = schema.safeParse(job.data);
        if (parsed.success) return [{ id: job.id, data: parsed.data }];
        ctx.logger.error({ queue: name, message_id: job.id }, 'malformed queue message dropped');
        return [];
      });
      try {
        await handler(messages);
      } catch (error) {
        ctx.logger.error({ err: error, queue: name, message_ids: messages.map((m) => m.id) }, 'queue handler failed; pg-boss will redeliver');
        throw error;
      }
    });
  }
}
