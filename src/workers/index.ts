import type { Job } from 'pg-boss';
import type { AppContext } from '../context.ts';
import { QUEUES, type QueueKey, type QueueMessage } from '../queue/queue.ts';
import type { Services } from '../services.ts';
import { fulfillmentWorker } from './fulfillment.worker.ts';
import { syncJobWorker } from './sync-job.worker.ts';

type Handlers = { [K in QueueKey]: (messageId: string, message: QueueMessage<K>) => Promise<void> };

/**
 * Subscribes a handler to every queue. The mapped type makes a queue without a handler a compile
 * error, and the check below makes it a start-up error too. A handler that throws (e.g. the
 * database went away) leaves the message to pg-boss, which delivers it again.
 */
export async function startWorkers(ctx: AppContext, services: Services): Promise<void> {
  const syncJobs = syncJobWorker(ctx, services.syncJobs);
  const fulfillments = fulfillmentWorker(ctx, services.fulfillments);
  const handlers: Handlers = {
    syncJob: (id, message) => syncJobs.handle(id, message.syncJobId),
    fulfillment: (id, message) => fulfillments.handle(id, message.fulfillmentId),
  };

  for (const key of Object.keys(QUEUES) as QueueKey[]) {
    const handler = handlers[key] as (id: string, message: unknown) => Promise<void>;
    if (!handler) throw new Error(`queue ${QUEUES[key].name} has no handler`);
    const { name, schema } = QUEUES[key];
    await ctx.queue.boss.work(
      name,
      { batchSize: 1, localConcurrency: ctx.config.workerConcurrency, pollingIntervalSeconds: 0.5 },
      async ([job]: Job<unknown>[]) => {
        if (!job) return;
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
      },
    );
  }
}
