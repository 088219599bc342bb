/**
 * Capacity: the highest open-loop rate, in steps, at which the e2e p99 (webhook sent to every
 * supplier order placed) stays within PLAN.capacity.p99Ms, with the e2e phase's layout (one API and
 * one worker process, two suppliers answering after 20 ms, pacing raised). Each step's p99 is the
 * median of PLAN.runs streams; a step stops early once its median is decided (two of three runs on
 * the same side of the limit).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SHOP, percentile, runTsForJson } from '../common.ts';
import { medianOf, setupTenant, supplierOrderTimes, untilJobsFinished, type Bench, type Tenant } from '../harness.ts';
import type { OpenLoopInput, OpenLoopResult, SentOrder } from '../open-loop.ts';
import { PLAN, type Results } from '../settings.ts';

export async function capacityPhase(bench: Bench): Promise<Results> {
  const { rates, seconds, p99Ms, latencyMs } = PLAN.capacity;
  bench.log(`capacity: open-loop steps of ${rates.join(', ')} orders/s for ${seconds} s each, median of ${PLAN.runs} runs per step (2 suppliers, sandbox answering in ${latencyMs} ms, PLATFORM_PACING=${PLAN.pacing}) until e2e p99 exceeds ${p99Ms} ms; one API and one worker process`);
  const url = await bench.createDatabase('bench_capacity');
  const apiProcess = await bench.startServiceProcess('capacity-api', url, { ROLE: 'api' });
  const worker = await bench.startServiceProcess('capacity-worker', url, { ROLE: 'worker', PLATFORM_PACING: PLAN.pacing });
  const tenant = await setupTenant(apiProcess.url!);
  await resetSuppliers(bench);

  // A warm-up at the first rate (JIT, connection pools), drained before the steps.
  await runTsForJson<OpenLoopResult>('bench/open-loop.ts', { url: apiProcess.url!, rate: rates[0]!, seconds: 3, startId: 9_900_000_000, outFile: path.join(bench.workspace.tmp, 'capacity-warmup.json') } satisfies OpenLoopInput, {
    logFile: path.join(bench.workspace.logs, 'open-loop-capacity-warmup.log'),
  });
  await untilJobsFinished(url, tenant, 120_000);
  let capacity = 0;
  const steps: string[] = [];
  let startId = 10_000_000_000;
  for (const rate of rates) {
    const p99s: number[] = [];
    const majority = Math.floor(PLAN.runs / 2) + 1;
    while (p99s.length < PLAN.runs) {
      p99s.push(await step(bench, url, tenant, apiProcess.url!, rate, startId));
      startId += rate * seconds;
      const within = p99s.filter((p99) => p99 <= p99Ms).length;
      if (within >= majority || p99s.length - within >= majority) break;
    }
    const p99 = medianOf(p99s);
    const shown = p99s.map((value) => (Number.isFinite(value) ? String(value) : 'not all routed')).join(', ');
    steps.push(`${rate}/s: p99 ${Number.isFinite(p99) ? `${p99} ms` : 'not all routed'} (runs ${shown})`);
    bench.log(`  ${rate} orders/s: median p99 ${p99} ms (runs ${shown})`);
    if (!(p99 <= p99Ms)) break;
    capacity = rate;
  }
  await apiProcess.stop();
  await worker.stop();
  return {
    'capacity.orders_per_s': capacity,
    'capacity.steps': steps.join('; '),
  };
}

async function resetSuppliers(bench: Bench): Promise<void> {
  await bench.sandboxControl('POST', '/reset');
  for (const supplier of SHOP.suppliers) await bench.sandboxControl('POST', `/stores/${supplier.shopDomain}/faults`, { latencyMs: PLAN.capacity.latencyMs });
}

/** One stream at `rate`, drained: its e2e p99 (infinite when some order was not routed in time). */
async function step(bench: Bench, url: string, tenant: Tenant, apiUrl: string, rate: number, startId: number): Promise<number> {
  await resetSuppliers(bench);
  const outFile = path.join(bench.workspace.tmp, `capacity-${rate}-${startId}.json`);
  await runTsForJson<OpenLoopResult>('bench/open-loop.ts', { url: apiUrl, rate, seconds: PLAN.capacity.seconds, startId, outFile } satisfies OpenLoopInput, {
    logFile: path.join(bench.workspace.logs, `open-loop-capacity-${rate}-${startId}.log`),
  });
  const drained = await untilJobsFinished(url, tenant, 120_000);
  const created = await supplierOrderTimes(bench);
  const sent = JSON.parse(readFileSync(outFile, 'utf8')) as SentOrder[];
  const latencies = sent
    .map((order) => (order.status === 200 && order.syncJobIds.length > 0 && order.syncJobIds.every((id) => created.has(id)) ? Math.max(...order.syncJobIds.map((id) => created.get(id)!)) - order.sentAt : Number.POSITIVE_INFINITY))
    .sort((a, b) => a - b);
  bench.log(`    ${rate} orders/s: p99 ${percentile(latencies, 99)} ms${drained ? '' : ' (not drained)'}`);
  return drained ? percentile(latencies, 99) : Number.POSITIVE_INFINITY;
}
