import type { Job, PgBoss } from 'pg-boss';
import { QUEUES, type QueueKey, type QueueMessage } from '../queue/queue.ts';
import type { AttemptRow } from '../attempts/kind.ts';
import { startSweeper, type SweepHook } from '../attempts/sweep.ts';
import { startEventPruner, type EventPruning } from '../events/retention.ts';
import { AttemptWorker } from '../attempts/worker.ts';
import { DELIVERIES_PER_ENDPOINT, DeliveryWorker } from './delivery.worker.ts';
import type { Infrastructure } from '../services.ts';
import { sqlOf } from '../db/sql.ts';
import { registerKinds, type RegisteredKind } from './kinds.ts';

/**
 * A worker fetches up to this many messages at once and works on them together: one fetch, one
 * read, one take and one completion for the batch instead of one each per message. Each database
 * round trip costs the service and PostgreSQL far more CPU than the statement itself.
 */
const BATCH_SIZE = 8;

/** `concurrency` shared out exactly over as few batches of up to BATCH_SIZE as it takes: 12 is batches of 6 and 6, not 8 and 8. */
export function batchSizes(concurrency: number): number[] {
  const batches = Math.ceil(concurrency / BATCH_SIZE);
  return Array.from({ length: batches }, (_, i) => Math.floor(concurrency / batches) + (i < concurrency % batches ? 1 : 0));
}

/** When its queue is empty a worker polls every 0.5 s (pg-boss's floor). */
export const POLLING_INTERVAL_SECONDS = 0.5;

/**
 * Consumes a queue one message per handler call, `slots` at once, at most `perGroup` of one group
 * (pg-boss `groupConcurrency`). For work whose messages take very different times (an HTTP call to
 * someone else's server): a batch would wait for its slowest message, here each slot takes its next
 * message as soon as it is free. Each slot is its own pg-boss worker; the first polls every 0.5 s,
 * the others every second, and a slot that got a message wakes the next, so a backlog fans out over
 * every slot at once.
 */
export async function consumeEach(boss: PgBoss, name: string, slots: number, perGroup: number, handle: (jobs: Job<unknown>[]) => Promise<void>): Promise<void> {
  const workerIds: string[] = [];
  for (let i = 0; i < slots; i++) {
    const options = { batchSize: 1, localConcurrency: 1, groupConcurrency: perGroup, pollingIntervalSeconds: i === 0 ? POLLING_INTERVAL_SECONDS : 1 };
    workerIds.push(
      await boss.work(name, options, async (jobs: Job<unknown>[]) => {
        if (jobs.length === 0) return;
        const next = workerIds[i + 1];
        if (next) boss.notifyWorker(next);
        await handle(jobs);
        boss.notifyWorker(workerIds[i]!);
      }),
    );
  }
}

/** Queues whose messages are not attempts of a retried kind: each message is one unit of work that records its own outcome. */
type RunQueue = Exclude<QueueKey, 'webhookDelivery'>;
/**
 * What runs a run queue's message. `stopping` is aborted once the workers stop (a graceful shutdown):
 * a run in progress then stops at its next step and hands itself back (src/db/locks.ts `handBackRun`)
 * rather than keep the queue's stop waiting, or be left `running` under a lease nobody renews.
 */
export type RunHandlers = { [K in RunQueue]: (message: QueueMessage<K>, stopping: AbortSignal) => Promise<void> };

/**
 * Subscribes one worker to the queue of every kind of retried work (src/workers/kinds.ts), one to
 * each run queue (`runs`), and the webhook delivery worker to its queue (a queue without a worker
 * fails the start-up), and starts the sweep for stranded work (src/attempts/sweep.ts) and the pruning
 * of old events (src/events/retention.ts); returns what stops those two and the runs in progress
 (`stop`: they hand themselves back, see RunHandlers; call it before the queue stops) and `drain`, which
 * resolves once the attempts let go of by their batches (still calling a slow platform,
 * src/attempts/worker.ts) have recorded their outcomes: call it after
 * the queue stopped. A message whose outcome could not be recorded, or a batch whose handler throws
 * (e.g. the database went away), is left to pg-boss, which delivers it again (an attempt's message at
 * most as often as the retry policy allows attempts: src/queue/queue.ts).
 */
export async function startWorkers(
  ctx: Infrastructure,
  { runs, sweepHooks, events }: { runs: RunHandlers; sweepHooks: readonly SweepHook[]; events: EventPruning['events'] },
): Promise<{ stop: () => Promise<void>; drain: () => Promise<void> }> {
  const kinds = registerKinds(ctx);
  for (const key of Object.keys(QUEUES) as QueueKey[]) {
    const consumers = kinds.filter(({ kind }) => kind.queue.name === QUEUES[key].name).length + (key in runs ? 1 : 0) + (key === 'webhookDelivery' ? 1 : 0);
    if (consumers === 0) throw new Error(`queue ${QUEUES[key].name} has no worker`);
    if (consumers > 1) throw new Error(`queue ${QUEUES[key].name} has ${consumers} workers`);
  }
  const workers: AttemptWorker<AttemptRow, string, object, { row: AttemptRow }>[] = [];
  for (const registered of kinds) workers.push(startWorker(ctx, registered));
  const runsStopping = new AbortController();
  for (const key of Object.keys(runs) as RunQueue[]) {
    const run = runs[key] as (message: QueueMessage<RunQueue>, stopping: AbortSignal) => Promise<void>;
    startRunWorker(ctx, key, (message) => run(message, runsStopping.signal));
  }
  await startDeliveryWorker(ctx);
  const stopSweeper = startSweeper(ctx, kinds, sweepHooks);
  const stopPruner = startEventPruner({ events, retentionDays: ctx.config.eventRetentionDays, logger: ctx.logger });
  const stop = async () => {
    runsStopping.abort();
    await Promise.all([stopSweeper(), stopPruner()]);
  };
  return { stop, drain: async () => void (await Promise.all(workers.map((worker) => worker.drain()))) };
}

/**
 * Webhook deliveries wait on other people's servers: one message at a time per slot, and a bounded
 * number per endpoint (src/workers/delivery.worker.ts), so a slow endpoint holds only its own.
 */
async function startDeliveryWorker(ctx: Infrastructure): Promise<void> {
  const worker = new DeliveryWorker(ctx);
  const { name, schema } = QUEUES.webhookDelivery;
  await consumeEach(ctx.queue.boss, name, ctx.config.webhooks.deliveryConcurrency, DELIVERIES_PER_ENDPOINT, async (jobs) => {
    for (const job of jobs) {
      const parsed = schema.safeParse(job.data);
      if (!parsed.success) {
        ctx.logger.error({ queue: name, message_id: job.id }, 'malformed queue message dropped');
        continue;
      }
      try {
        await worker.handle({ messageId: job.id, deliveryId: parsed.data.deliveryId });
      } catch (error) {
        ctx.logger.error({ err: error, queue: name, message_id: job.id }, 'queue handler failed; pg-boss will redeliver');
        throw error;
      }
    }
  });
}

/**
 * How often an idle run queue is polled: a run may start half a second late (it lasts seconds to
 * minutes), and its queues cost the database no more polls than before they took one message per loop.
 */
const RUN_QUEUE_IDLE_POLL_MS = 500;

/**
 * Runs the messages of a run queue (a reconciliation run, a divergence-watch pass) one per loop,
 * `workerConcurrency` loops. A run can take minutes (a busy or slow store: thousands of pages, a
 * read per shipped order, 429 pauses); loops that took batches fetched nothing more until the slowest
 * run of their batch had finished, so a few slow stores held back every other store's runs (passes
 * queued longer than their lease were then failed as abandoned). While the queue is empty one loop
 * polls and the others are parked (src/queue/idle-loops.ts). A message is settled once its run has
 * recorded its outcome; a run that throws has its message failed, and pg-boss delivers it again.
 */
function startRunWorker<Q extends RunQueue>(ctx: Infrastructure, key: Q, run: (message: QueueMessage<Q>) => Promise<void>): void {
  const spec = QUEUES[key];
  const { name, schema } = spec;
  const loops = Array.from({ length: ctx.config.workerConcurrency }, () => 1);
  const idlePollMs = Math.max(ctx.config.queueIdlePollMs, RUN_QUEUE_IDLE_POLL_MS);
  ctx.queue.consumeSettling(spec, { batchSizes: loops, idlePollMs, logger: ctx.logger }, async (jobs) => {
    const messages = jobs.flatMap((job) => {
      const parsed = schema.safeParse(job.data);
      if (parsed.success) return [parsed.data as QueueMessage<Q>];
      ctx.logger.error({ queue: name, message_id: job.id }, 'malformed queue message dropped');
      return [];
    });
    try {
      await Promise.all(messages.map(run));
    } catch (error) {
      ctx.logger.error({ err: error, queue: name, message_ids: jobs.map((job) => job.id) }, 'queue handler failed; pg-boss will redeliver');
      throw error;
    }
    await ctx.queue.settleIn(sqlOf(ctx.orm), spec, jobs.map((job) => job.id));
    return new Set<string>();
  });
}

/**
 * The attempts of a kind run in batches whose messages the worker settles in the statements that
 * record what each did (src/attempts/worker.ts), so a batch costs no completion statement and commit
 * of its own. `workerConcurrency` is shared out over loops of up to BATCH_SIZE messages (`batchSizes`).
 */
function startWorker(ctx: Infrastructure, { kind, attempt }: RegisteredKind): AttemptWorker<AttemptRow, string, object, { row: AttemptRow }> {
  const worker = new AttemptWorker(ctx, kind, attempt);
  const { name, schema } = kind.queue;
  ctx.queue.consumeSettling(kind.queue, { batchSizes: batchSizes(ctx.config.workerConcurrency), idlePollMs: ctx.config.queueIdlePollMs, logger: ctx.logger }, async (jobs) => {
    const malformed: string[] = [];
    const messages = jobs.flatMap((job) => {
      const parsed = schema.safeParse(job.data);
      if (parsed.success) {
        const { turnAt, estimatedAt } = parsed.data as { turnAt?: string; estimatedAt?: string };
        return [
          {
            messageId: job.id,
            rowId: kind.rowIdOf(parsed.data),
            turnAt: turnAt ? new Date(turnAt) : undefined,
            estimatedAt: estimatedAt ? new Date(estimatedAt) : undefined,
          },
        ];
      }
      ctx.logger.error({ queue: name, message_id: job.id }, 'malformed queue message dropped');
      malformed.push(job.id);
      return [];
    });
    try {
      const unrecorded = await worker.handle(messages, malformed);
      if (unrecorded.size > 0) ctx.logger.warn({ queue: name, message_ids: [...unrecorded] }, 'outcomes not recorded; pg-boss will redeliver those messages');
      return unrecorded;
    } catch (error) {
      ctx.logger.error({ err: error, queue: name, message_ids: messages.map((m) => m.messageId) }, 'queue handler failed; pg-boss will redeliver');
      throw error;
    }
  });
  return worker;
}
