/**
 * End to end: an open-loop stream of orders/create webhooks into an API process, routed by a worker
 * process to the sandbox; the time from a webhook sent to every supplier order placed.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { GiveUp, SHOP, percentile, round, runTsForJson } from '../common.ts';
import { medianOfRuns, setupTenant, supplierOrderTimes, untilJobsFinished, type Bench, type ServiceProcess, type Tenant } from '../harness.ts';
import type { OpenLoopInput, OpenLoopResult, SentOrder } from '../open-loop.ts';
import { PLAN, type Results } from '../settings.ts';

const E2E_DRAIN_TIMEOUT_MS = 150_000;

/** The median time to routed of the orders sent in each 2-second slice of the stream: shows a backlog building or steady. */
function logLatencyOverTime(bench: Bench, sent: SentOrder[], created: Map<string, number>, firstSentAt: number): void {
  const slices = new Map<number, number[]>();
  for (const order of sent) {
    const times = order.syncJobIds.map((id) => created.get(id));
    if (times.length === 0 || times.some((t) => t === undefined)) continue;
    const slice = Math.floor((order.sentAt - firstSentAt) / 2000);
    if (!slices.has(slice)) slices.set(slice, []);
    slices.get(slice)!.push(Math.max(...(times as number[])) - order.sentAt);
  }
  const medians = [...slices].sort(([a], [b]) => a - b).map(([slice, values]) => `${slice * 2}s:${percentile(values.sort((a, b) => a - b), 50)}`);
  bench.log(`  median ms to routed by send time: ${medians.join(' ')}`);
}

export async function e2ePhase(bench: Bench): Promise<Results> {
  const { rate, seconds, warmupSeconds, latencyMs } = PLAN.e2e;
  bench.log(`e2e: open loop, ${rate} orders/s for ${seconds} s after a ${warmupSeconds} s warm-up, sandbox answering in ${latencyMs} ms, per-store pacing raised to PLATFORM_PACING=${PLAN.pacing}, one API and one worker process`);
  bench.notes.push(`e2e and processing run with PLATFORM_PACING=${PLAN.pacing}: the sandbox has no rate limit, and the default per-store pacing (2-5 calls/s) would cap each supplier far below ${rate} orders/s`);
  const url = await bench.createDatabase('bench_e2e');
  // As deployed for load (README, "External PostgreSQL, several API and worker processes"): an API
  // process and a worker process, so the two can use both cores.
  const service = await bench.startServiceProcess('e2e-api', url, { ROLE: 'api' });
  const worker = await bench.startServiceProcess('e2e-worker', url, { ROLE: 'worker', PLATFORM_PACING: PLAN.pacing });
  const tenant = await setupTenant(service.url!);
  await bench.sandboxControl('POST', '/reset');
  for (const supplier of SHOP.suppliers) await bench.sandboxControl('POST', `/stores/${supplier.shopDomain}/faults`, { latencyMs });

  // As for ingest, a warm-up at the same rate first (JIT, connection pools), drained before the measured stream.
  await runTsForJson<OpenLoopResult>(
    'bench/open-loop.ts',
    { url: service.url!, rate, seconds: warmupSeconds, startId: 2_900_000_000, outFile: path.join(bench.workspace.tmp, 'e2e-warmup.json') } satisfies OpenLoopInput,
    { logFile: path.join(bench.workspace.logs, 'open-loop-warmup.log') },
  );
  if (!(await untilJobsFinished(url, tenant, E2E_DRAIN_TIMEOUT_MS))) throw new GiveUp('e2e: the warm-up orders were not routed in time');
  const runs: Results[] = [];
  for (let run = 1; run <= PLAN.runs; run++) {
    await bench.sandboxControl('POST', '/reset');
    for (const supplier of SHOP.suppliers) await bench.sandboxControl('POST', `/stores/${supplier.shopDomain}/faults`, { latencyMs });
    bench.log(`  run ${run} of ${PLAN.runs}`);
    runs.push(await measuredStream(bench, url, tenant, { api: service, worker }, 3_000_000_000 + run * 100_000_000));
  }
  await service.stop();
  await worker.stop();

  return medianOfRuns('e2e', runs, (key) => key.endsWith('per_order'));
}

/** One measured stream, drained: its figures. */
async function measuredStream(bench: Bench, url: string, tenant: Tenant, processes: { api: ServiceProcess; worker: ServiceProcess }, startId: number): Promise<Results> {
  const { rate, seconds } = PLAN.e2e;
  const serviceUrl = processes.api.url!;
  const outFile = path.join(bench.workspace.tmp, `e2e-sent-${startId}.json`);
  const stopSampling = bench.sampleActivity('the stream');
  // What each order costs the machine, stream and drain together: the API's, the worker's, PostgreSQL's and the sandbox's CPU.
  const apiCpu = bench.cpuWindow(processes.api.child.process.pid!);
  const workerCpu = bench.cpuWindow(processes.worker.child.process.pid!);
  const sandboxCpu = bench.sandboxCpuWindow();
  const sentResult = await runTsForJson<OpenLoopResult>(
    'bench/open-loop.ts',
    { url: serviceUrl, rate, seconds, startId, outFile } satisfies OpenLoopInput,
    { logFile: path.join(bench.workspace.logs, `open-loop-${startId}.log`) },
  );
  bench.log(`  sent ${sentResult.sent} webhooks, answers ${JSON.stringify(sentResult.outcomes)}; sender lag at worst ${sentResult.maxLagMs} ms`);
  if (sentResult.failed > 0) bench.notes.push(`e2e: ${sentResult.failed} of ${sentResult.sent} webhooks not answered 200 (${JSON.stringify(sentResult.outcomes)})`);
  const sent = JSON.parse(readFileSync(outFile, 'utf8')) as SentOrder[];
  const drained = await untilJobsFinished(url, tenant, E2E_DRAIN_TIMEOUT_MS);
  const cpu = { api: apiCpu(), worker: workerCpu().process, sandbox: sandboxCpu() };
  await stopSampling();
  if (!drained) bench.notes.push(`e2e: not every job finished within ${E2E_DRAIN_TIMEOUT_MS / 1000} s after the stream ended`);

  const created = await supplierOrderTimes(bench);
  const perOrder: number[] = [];
  const perSupplierOrder: number[] = [];
  let lastCreated = 0;
  let routed = 0;
  for (const order of sent) {
    if (order.status !== 200 || order.syncJobIds.length === 0) continue;
    const times = order.syncJobIds.map((id) => created.get(id));
    for (const t of times) if (t !== undefined) perSupplierOrder.push(t - order.sentAt);
    if (times.some((t) => t === undefined)) continue;
    const done = Math.max(...(times as number[]));
    lastCreated = Math.max(lastCreated, done);
    perOrder.push(done - order.sentAt);
    routed++;
  }
  logLatencyOverTime(bench, sent, created, sentResult.firstSentAt);
  perOrder.sort((a, b) => a - b);
  perSupplierOrder.sort((a, b) => a - b);
  const answers = sent.filter((o) => o.answeredAt !== null).map((o) => o.answeredAt! - o.sentAt).sort((a, b) => a - b);
  const spanSeconds = (lastCreated - sentResult.firstSentAt) / 1000;
  bench.log(`  ${routed}/${sent.length} orders fully routed; per order p50 ${percentile(perOrder, 50)} ms, p99 ${percentile(perOrder, 99)} ms; webhook answer p99 ${percentile(answers, 99)} ms`);
  if (routed < sent.length) bench.notes.push(`e2e: ${sent.length - routed} of ${sent.length} orders were not fully routed`);
  const perOrderMs = (cpuSeconds: number) => round((cpuSeconds * 1000) / sent.length, 2);
  bench.log(`  CPU per order: API ${perOrderMs(cpu.api.process)} ms, worker ${perOrderMs(cpu.worker)} ms, PostgreSQL ${perOrderMs(cpu.api.database)} ms, sandbox ${perOrderMs(cpu.sandbox)} ms`);
  return {
    'e2e.orders_per_s': round(routed / spanSeconds),
    'e2e.p50_ms': percentile(perOrder, 50),
    'e2e.p99_ms': percentile(perOrder, 99),
    'e2e.supplier_order_p99_ms': percentile(perSupplierOrder, 99),
    'e2e.webhook_p99_ms': percentile(answers, 99),
    'e2e.orders_routed': routed,
    'e2e.orders_sent': sent.length,
    'e2e.api_cpu_ms_per_order': perOrderMs(cpu.api.process),
    'e2e.worker_cpu_ms_per_order': perOrderMs(cpu.worker),
    'e2e.db_cpu_ms_per_order': perOrderMs(cpu.api.database),
    'e2e.sandbox_cpu_ms_per_order': perOrderMs(cpu.sandbox),
  };
}
