/**
 * Processing: a backlog of queued sync jobs drained by one worker process against the sandbox,
 * compared with bare pg-boss running no-op handlers at the same concurrency (bench/baseline-queue.ts).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { round, spawnTs, waitForLog } from '../common.ts';
import { medianOfRuns, setupTenant, untilJobsFinished, withClient, type Bench } from '../harness.ts';
import type { QueueBaselineInput, QueueBaselineResult } from '../baseline-queue.ts';
import { PLAN, type Results } from '../settings.ts';

/**
 * The phase runs PLAN.runs times, each run its own backlog drained by the service and then by bare
 * pg-boss right after it: this VM's speed moves within minutes, so each run's ratio compares two
 * drains a minute apart, and the figures are the medians (with each one's runs and spread).
 */
export async function processingPhase(bench: Bench): Promise<Results> {
  const { workerConcurrency } = bench.service;
  bench.log(`processing: ${PLAN.processing.jobs} queued sync jobs drained against the sandbox (answering at once), WORKER_CONCURRENCY=${workerConcurrency}; ${PLAN.runs} run(s), each against bare pg-boss right after`);
  const runs: Results[] = [];
  for (let run = 1; run <= PLAN.runs; run++) {
    bench.log(`  run ${run} of ${PLAN.runs}`);
    runs.push(await processingRun(bench, run));
  }
  return medianOfRuns('processing', runs, (key) => key === 'processing.ratio' || key.endsWith('jobs_per_s') || key.endsWith('per_job'));
}

async function processingRun(bench: Bench, run: number): Promise<Results> {
  const { jobs } = PLAN.processing;
  const { workerConcurrency } = bench.service;
  const url = await bench.createDatabase(`bench_processing_${run}`);
  const apiProcess = await bench.startServiceProcess('processing-api', url, { ROLE: 'api' });
  const tenant = await setupTenant(apiProcess.url!);
  const queued = await bench.load('processing-queue', {
    url: apiProcess.url!, mode: 'orders', path: '/v1/orders/webhook', connections: 16, amount: jobs / 2, startId: 4_000_000_000 + run * 10_000_000,
  });
  await apiProcess.stop();
  const pending = await withClient(url, async (c) => Number((await c.query(`select count(*) from sync_jobs where status = 'pending'`)).rows[0].count));
  bench.log(`  queued ${pending} jobs through ${queued.ok} webhooks`);
  await bench.sandboxControl('POST', '/reset');

  const worker = await bench.startServiceProcess('processing-worker', url, { ROLE: 'worker', PLATFORM_PACING: PLAN.pacing });
  const workerCpu = bench.cpuWindow(worker.child.process.pid!);
  const sandboxCpu = bench.sandboxCpuWindow();
  const stopSampling = bench.sampleActivity('the drain');
  const drained = await untilJobsFinished(url, tenant, 300_000);
  const drainCpu = workerCpu();
  const drainSandboxCpu = sandboxCpu();
  await stopSampling();
  await worker.stop();
  const span = await withClient(url, async (c) =>
    (await c.query(`select count(*) filter (where status = 'completed') as completed, count(*) filter (where status = 'dead') as dead,
       extract(epoch from max(completed_at) - min(completed_at)) as seconds from sync_jobs`)).rows[0] as { completed: string; dead: string; seconds: string });
  const completed = Number(span.completed);
  const jobsPerSecond = (completed - 1) / Number(span.seconds);
  if (!drained || completed < pending) bench.notes.push(`processing: ${completed} of ${pending} jobs completed (${span.dead} dead)`);
  bench.log(`  service: ${completed} completed in ${round(Number(span.seconds))} s: ${round(jobsPerSecond)} jobs/s`);
  bench.reportCpu('service', drainCpu, completed, 'job');
  // Not the service's, but taken from the same two CPUs: bare pg-boss's no-op handlers call nothing.
  bench.log(`  the sandbox answering it: CPU per job ${round((drainSandboxCpu * 1000) / completed, 2)} ms`);

  const baselineUrl = await bench.createDatabase(`bench_processing_baseline_${run}`);
  const outFile = path.join(bench.workspace.tmp, `baseline-queue-${run}.json`);
  const baselineChild = bench.track(spawnTs('bench/baseline-queue.ts', {
    args: [JSON.stringify({ databaseUrl: baselineUrl, count: jobs, concurrency: workerConcurrency, outFile } satisfies QueueBaselineInput)],
    logFile: path.join(bench.workspace.logs, `baseline-queue-${run}.log`),
  }));
  await waitForLog(baselineChild, 'draining', 120_000);
  const baselineCpu = bench.cpuWindow(baselineChild.process.pid!);
  await waitForLog(baselineChild, 'drained', 300_000);
  const baselineDrainCpu = baselineCpu();
  await baselineChild.exited;
  const baseline = JSON.parse(readFileSync(outFile, 'utf8')) as QueueBaselineResult;
  bench.log(`  bare pg-boss, no-op handlers: ${round(baseline.jobsPerSecond)} jobs/s`);
  bench.reportCpu('bare pg-boss', { process: baseline.cpuSeconds, database: baselineDrainCpu.database }, jobs, 'job');
  return {
    'processing.jobs_per_s': round(jobsPerSecond),
    'processing.baseline_jobs_per_s': round(baseline.jobsPerSecond),
    'processing.ratio': round(jobsPerSecond / baseline.jobsPerSecond, 3),
    'processing.service_cpu_ms_per_job': round((drainCpu.process * 1000) / completed, 2),
    'processing.service_db_cpu_ms_per_job': round((drainCpu.database * 1000) / completed, 2),
    'processing.sandbox_cpu_ms_per_job': round((drainSandboxCpu * 1000) / completed, 2),
    'processing.baseline_cpu_ms_per_job': round((baseline.cpuSeconds * 1000) / jobs, 2),
    'processing.baseline_db_cpu_ms_per_job': round((baselineDrainCpu.database * 1000) / jobs, 2),
  };
}
