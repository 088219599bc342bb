/**
 * The processing baseline: bare pg-boss (the service's queue definition, `boss.work` in the batches
 * the service's workers take, with no-op handlers) draining `count` queued messages at the service's
 * worker concurrency. Writes when the first and the last handler finished to `outFile`.
 */
import { writeFileSync } from 'node:fs';
import type { Job, JobResult, PgBoss } from 'pg-boss';
import { batchSizes, POLLING_INTERVAL_SECONDS } from '../src/workers/index.ts';
import { Queue } from '../src/queue/queue.ts';
import { syncJobKind } from '../src/sync-jobs/kind.ts';
import { ATTEMPT_QUEUES } from '../src/workers/kinds.ts';
import { createLogger } from '../src/shared/logger.ts';

export interface QueueBaselineInput {
  databaseUrl: string;
  count: number;
  concurrency: number;
  outFile: string;
}

export interface QueueBaselineResult {
  count: number;
  first: number;
  last: number;
  jobsPerSecond: number;
  /** CPU seconds this process used while draining. */
  cpuSeconds: number;
}

/**
 * Consumes a queue with `concurrency` messages in flight, in the service's batch sizes. pg-boss waits
 * its polling interval after every batch, so a backlog would drain at one batch per worker every
 * 0.5 s. Each worker is registered on its own, so its handler knows its id and wakes it: after a batch
 * is handled the worker fetches the next at once, and only an empty fetch makes it wait.
 */
async function consume(boss: PgBoss, name: string, concurrency: number, handle: (jobs: Job<unknown>[]) => Promise<void>): Promise<void> {
  for (const batchSize of batchSizes(concurrency)) {
    let workerId: string | undefined;
    const options = { batchSize, localConcurrency: 1, pollingIntervalSeconds: POLLING_INTERVAL_SECONDS, perJobResults: true } as const;
    workerId = await boss.work(name, options, async (jobs: Job<unknown>[]): Promise<JobResult[]> => {
      if (jobs.length === 0) return [];
      await handle(jobs);
      if (workerId) boss.notifyWorker(workerId);
      return jobs.map((job) => ({ id: job.id, status: 'completed' }));
    });
  }
}

const input = JSON.parse(process.argv[2] ?? '{}') as QueueBaselineInput;
const queue = await Queue.start({ connectionString: input.databaseUrl, logger: createLogger('warn'), supervise: true, queues: ATTEMPT_QUEUES });
const name = syncJobKind.queue.name;

for (let offset = 0; offset < input.count; offset += 1000) {
  const chunk = Array.from({ length: Math.min(1000, input.count - offset) }, (_, i) => ({ data: { syncJobId: `job_${offset + i}` } }));
  await queue.boss.insert(name, chunk);
}

const finishedAt: number[] = [];
let allDone: () => void;
const done = new Promise<void>((resolve) => (allDone = resolve));
console.log('draining');
const cpuBefore = process.cpuUsage();
await consume(queue.boss, name, input.concurrency, async (jobs) => {
  for (const _ of jobs) finishedAt.push(Date.now());
  if (finishedAt.length >= input.count) allDone();
});
await done;
const cpu = process.cpuUsage(cpuBefore);
const first = finishedAt[0]!;
const last = finishedAt.at(-1)!;
const result: QueueBaselineResult = {
  count: input.count,
  first,
  last,
  jobsPerSecond: (input.count - 1) / ((last - first) / 1000),
  cpuSeconds: (cpu.user + cpu.system) / 1e6,
};
writeFileSync(input.outFile, JSON.stringify(result));
console.log('drained');
await queue.stop(5_000).catch(() => {});
process.exit(0);
