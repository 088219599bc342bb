/**
 * Capacity: the highest open-loop rate, in steps, at which the e2e p99 (webhook sent to every
 * supplier order placed) stays within PLAN.capacity.p99Ms, with the e2e phase's layout (one API and
 * one worker process, two suppliers answering after 20 ms, pacing raised).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SHOP, percentile, runTsForJson } from '../common.ts';
import { setupTenant, untilJobsFinished, type Bench } from '../harness.ts';
import type { OpenLoopInput, OpenLoopResult, SentOrder } from '../open-loop.ts';
import { PLAN, type Results } from '../settings.ts';

export async function capacityPhase(bench: Bench): Promise<Results> {
  const { rates, seconds, p99Ms, latencyMs } = PLAN.capacity;
  bench.log(`capacity: open-loop steps of ${rates.join(', ')} orders/s for ${seconds} s each (2 suppliers, sandbox answering in ${latencyMs} ms, PLATFORM_PACING=${PLAN.pacing}) until e2e p99 exceeds ${p99Ms} ms; one API and one worker process`);
  const url = await bench.createDatabase('bench_capacity');
  const apiProcess = await bench.startServiceProcess('capacity-api', url, { ROLE: 'api' });
  const worker = await bench.startServiceProcess('capacity-worker', url, { ROLE: 'worker', PLATFORM_PACING: PLAN.pacing });
  const tenant = await setupTenant(apiProcess.url!);
  await bench.sandboxControl('POST', '/reset');
  for (const supplier of SHOP.suppliers) await bench.sandboxControl('POST', `/stores/${supplier.shopDomain}/faults`, { latencyMs });

  // A warm-up at the first rate (JIT, connection pools), drained before the steps.
  await runTsForJson<OpenLoopResult>('bench/open-loop.ts', { url: apiProcess.url!, rate: rates[0]!, seconds: 3, startId: 9_900_000_000, outFile: path.join(bench.workspace.tmp, 'capacity-warmup.json') } satisfies OpenLoopInput, {
    logFile: path.join(bench.workspace.logs, 'open-loop-capacity-warmup.log'),
  });
  await untilJobsFinished(url, tenant, 120_000);
  let capacity = 0;
  const steps: string[] = [];
  let startId = 10_000_000_000;
  for (const rate of rates) {
    await bench.sandboxControl('POST', '/reset');
    for (const supplier of SHOP.suppliers) await bench.sandboxControl('POST', `/stores/${supplier.shopDomain}/faults`, { latencyMs });
    const outFile = path.join(bench.workspace.tmp, `capacity-${rate}.json`);
    await runTsForJson<OpenLoopResult>('bench/open-loop.ts', { url: apiProcess.url!, rate, seconds, startId, outFile } satisfies OpenLoopInput, { logFile: path.join(bench.workspace.logs, `open-loop-capacity-${rate}.log`) });
    startId += rate * seconds;
    const drained = await untilJobsFinished(url, tenant, 120_000);
    const created = new Map<string, number>();
    for (const supplier of SHOP.suppliers) {
      const orders = await bench.sandboxControl<{ idempotencyKey: string | null; createdAt: string }[]>('GET', `/stores/${supplier.shopDomain}/orders`);
      for (const order of orders) if (order.idempotencyKey) created.set(order.idempotencyKey.replace(/^sync-job:/, ''), Date.parse(order.createdAt));
    }
    const sent = JSON.parse(readFileSync(outFile, 'utf8')) as SentOrder[];
    const latencies = sent
      .map((order) => (order.status === 200 && order.syncJobIds.length > 0 && order.syncJobIds.every((id) => created.has(id)) ? Math.max(...order.syncJobIds.map((id) => created.get(id)!)) - order.sentAt : Number.POSITIVE_INFINITY))
      .sort((a, b) => a - b);
    const p99 = percentile(latencies, 99);
    steps.push(`${rate}/s: p99 ${Number.isFinite(p99) ? `${p99} ms` : 'not all routed'}`);
    bench.log(`  ${rate} orders/s: p99 ${p99} ms${drained ? '' : ' (not drained)'}`);
    if (!(p99 <= p99Ms) || !drained) break;
    capacity = rate;
  }
  await apiProcess.stop();
  await worker.stop();
  return {
    'capacity.orders_per_s': capacity,
    'capacity.steps': steps.join('; '),
  };
}
