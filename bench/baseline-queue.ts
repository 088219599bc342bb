/**
 * The processing baseline: bare pg-boss (the service's queue definition, consumed the way the
 * service consumes it, with no-op handlers) draining `count` queued messages at the service's
 * worker concurrency. Writes when the first and the last handler finished to `outFile`.
 */
import { writeFileSync } from 'node:fs';
import { consume } from '../src/workers/index.ts';
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
