/**
 * `npm run bench`: the service under load on one embedded PostgreSQL with the sandbox platform.
 * Every program runs in its own process: the service (src/main.ts with the tsx loader, as `npm
 * start`), the sandbox (test/sandbox/main.ts), the load generators (bench/load.ts,
 * bench/open-loop.ts) and the baselines (bench/baseline-ingest.ts, bench/baseline-queue.ts). Each
 * phase has its own database. A phase is a module in bench/phases/ that takes the run's `Bench`
 * (bench/harness.ts: the database, the sandbox, process starts, notes) and returns its figures.
 * Prints a table and writes bench/results.json.
 *
 *   BENCH_PHASES=ingest,e2e,processing,scale,flow,fairness,capacity,cancellation,watch   run only these phases
 *   BENCH_QUICK=1                              shorter runs and smaller counts (a smoke test)
 *   BENCH_RUNS=3                               measured runs per figure of e2e, processing, cancellation and each capacity step:
 *                                              the median is reported, the runs and spread kept beside it
 *   BENCH_CPU_PROF=1                           service processes write V8 CPU profiles (kept)
 *   BENCH_KEEP=1                               keep the temporary folder (logs, database)
 *   BENCH_LOG_LEVEL=info                       the service's LOG_LEVEL (default info, as deployed)
 *   BENCH_SERVICE_NODE_ARGS="--cpu-prof"      extra node flags for the service processes (after npm start's)
 *   BENCH_PGSTAT=1                             log what PostgreSQL sessions wait on, and the top
 *                                              statements (pg_stat_statements), for the measured runs
 *   BENCH_EXPLAIN_MS=20                        also log the plans (auto_explain, with timings) of
 *                                              statements slower than 20 ms: logs/postgres.log in the kept folder
 * Any service variable in the environment (WORKER_CONCURRENCY, ...) is passed through.
 */
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { deleteDataDir } from '../src/db/embedded.ts';
import { ROOT, round } from './common.ts';
import { Bench, Infrastructure, createWorkspace, runLog, serviceEnvironment } from './harness.ts';
import { cancellationPhase } from './phases/cancellation.ts';
import { capacityPhase } from './phases/capacity.ts';
import { e2ePhase } from './phases/e2e.ts';
import { fairnessPhase, flowPhase } from './phases/flow.ts';
import { ingestPhase } from './phases/ingest.ts';
import { processingPhase } from './phases/processing.ts';
import { scalePhase } from './phases/scale.ts';
import { watchPhase } from './phases/watch.ts';
import { machine, printTable } from './report.ts';
import { CPU_PROF, KEEP, PHASES, PLAN, QUICK, SERVICE_NODE_ARGS, type Results } from './settings.ts';

/** In the order they run; BENCH_PHASES picks which. */
const PHASE_RUNS = [
  ['ingest', ingestPhase],
  ['e2e', e2ePhase],
  ['processing', processingPhase],
  ['scale', scalePhase],
  ['flow', flowPhase],
  ['fairness', fairnessPhase],
  ['capacity', capacityPhase],
  ['cancellation', cancellationPhase],
  ['watch', watchPhase],
] as const;

async function main(): Promise<number> {
  const startedAt = new Date();
  const log = runLog(startedAt);
  const workspace = createWorkspace();
  const service = serviceEnvironment(workspace);
  const infrastructure = new Infrastructure(workspace);
  const results: Results = {};
  const notes: string[] = [];

  let exitCode = 0;
  const info = machine();
  log(`machine: ${info.nproc} CPUs (${info.cpu}), ${info.memory_gib} GiB, load average ${info.loadavg_at_start.join(' ')}; Node ${info.node}`);
  if (QUICK) notes.push('BENCH_QUICK=1: shortened runs and counts; not the benchmark figures');
  process.once('SIGINT', () => void infrastructure.stopAll().then(() => process.exit(130)));
  try {
    const { db, sandboxUrl, sandboxPid } = await infrastructure.start();
    log(`embedded PostgreSQL on port ${db.port}, sandbox at ${sandboxUrl}, logs in ${workspace.logs}`);
    const bench = new Bench(workspace, db, sandboxUrl, sandboxPid, infrastructure, service, notes, log);
    for (const [phase, run] of PHASE_RUNS) {
      if (!PHASES.has(phase)) continue;
      Object.assign(results, await run(bench));
      await bench.settleAfterPhase();
    }
    results.rss_mb = Math.max(0, ...Object.values(bench.peaks));
    for (const [name, mb] of Object.entries(bench.peaks)) results[`rss_mb.${name}`] = mb;
  } catch (error) {
    console.error(`\nbenchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    console.error(`logs: ${workspace.logs}`);
    exitCode = 1;
  } finally {
    await infrastructure.stopAll();
    await delay(100);
  }

  const finishedAt = new Date();
  const output = {
    date: startedAt.toISOString(),
    duration_s: round((finishedAt.getTime() - startedAt.getTime()) / 1000),
    machine: { ...info, loadavg_at_end: os.loadavg().map((l) => round(l, 2)) },
    settings: { ...PLAN, service_node_args: SERVICE_NODE_ARGS.join(" "), worker_concurrency: service.workerConcurrency, log_level: service.env.LOG_LEVEL, quick: QUICK },
    notes,
    ...results,
  };
  writeFileSync(path.join(ROOT, 'bench', 'results.json'), `${JSON.stringify(output, null, 2)}\n`);
  printTable(results, notes);
  console.log(`\nwrote bench/results.json (${output.duration_s} s)`);
  if (CPU_PROF) console.log(`CPU profiles in ${workspace.profiles}`);
  if (KEEP || exitCode !== 0) console.log(`kept ${workspace.tmp}`);
  else {
    deleteDataDir(path.join(workspace.tmp, 'service-data'));
    deleteDataDir(path.join(workspace.tmp, 'postgres'));
    rmSync(workspace.tmp, { recursive: true, force: true });
  }
  return exitCode;
}

process.exit(await main());
