/**
 * Cancellation: orders routed and placed at both suppliers, then cancelled on the storefront by an
 * open-loop stream of orders/cancelled webhooks; the time from a cancellation sent until every
 * supplier order of that order is cancelled at its supplier (the sandbox's record of the cancel
 * call it carried out). One API and one worker process, as e2e.
 *   cancellation.p50_ms / p99_ms: per storefront order, webhook sent to its last supplier order cancelled
 *   cancellation.left_open: supplier orders of cancelled storefront orders still open at the end (must be 0)
 *   cancellation.cpu_ms_per_order: CPU of the API, the worker and PostgreSQL from the first cancellation sent to the last carried out, per order
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { GiveUp, SHOP, percentile, round, runTsForJson } from '../common.ts';
import { medianOfRuns, setupTenant, untilJobsFinished, withClient, type Bench, type Tenant } from '../harness.ts';
import type { OpenLoopInput, OpenLoopResult, SentOrder } from '../open-loop.ts';
import { PLAN, type Results } from '../settings.ts';

const DRAIN_TIMEOUT_MS = 150_000;

interface SupplierOrder {
  id: number | string;
  idempotencyKey: string | null;
}
interface CarriedOut {
  orderId: string;
  at: string;
}

export async function cancellationPhase(bench: Bench): Promise<Results> {
  const { rate, seconds, latencyMs } = PLAN.cancellation;
  bench.log(`cancellation: ${rate * seconds} orders routed to both suppliers, then cancelled by an open loop of ${rate} orders/cancelled webhooks/s for ${seconds} s (sandbox answering in ${latencyMs} ms), one API and one worker process`);
  const url = await bench.createDatabase('bench_cancellation');
  const service = await bench.startServiceProcess('cancellation-api', url, { ROLE: 'api' });
  const worker = await bench.startServiceProcess('cancellation-worker', url, { ROLE: 'worker', PLATFORM_PACING: PLAN.pacing });
  const tenant = await setupTenant(service.url!);
  const pids = { api: service.child.process.pid!, worker: worker.child.process.pid! };
  const runs: Results[] = [];
  // Run 0 warms the processes up (JIT, pools, the cancellation statements' plans); it is not measured.
  for (let run = 0; run <= PLAN.runs; run++) {
    bench.log(run === 0 ? '  warm-up' : `  run ${run} of ${PLAN.runs}`);
    const figures = await measuredRun(bench, url, tenant, service.url!, pids, 4_000_000_000 + run * 100_000_000, run === 0 ? 2 : seconds);
    if (run > 0) runs.push(figures);
  }
  await service.stop();
  await worker.stop();
  return medianOfRuns('cancellation', runs);
}

/** Routes a batch of orders, cancels them all in an open loop, and measures the cancellations. */
async function measuredRun(bench: Bench, url: string, tenant: Tenant, serviceUrl: string, pids: { api: number; worker: number }, startId: number, seconds: number): Promise<Results> {
  const { rate, latencyMs } = PLAN.cancellation;
  await bench.sandboxControl('POST', '/reset');
  for (const supplier of SHOP.suppliers) await bench.sandboxControl('POST', `/stores/${supplier.shopDomain}/faults`, { latencyMs });

  const routed = await openLoop(bench, { url: serviceUrl, rate, seconds, startId, outFile: path.join(bench.workspace.tmp, `cancellation-created-${startId}.json`) });
  if (!(await untilJobsFinished(url, tenant, DRAIN_TIMEOUT_MS))) throw new GiveUp('cancellation: the orders to cancel were not routed in time');
  const jobsOf = new Map(routed.filter((order) => order.status === 200).map((order) => [order.orderId, order.syncJobIds]));

  const stopSampling = bench.sampleActivity('the cancellations');
  const apiCpu = bench.cpuWindow(pids.api);
  const workerCpu = bench.cpuWindow(pids.worker);
  const cancelOutFile = path.join(bench.workspace.tmp, `cancellation-sent-${startId}.json`);
  const cancels = await openLoop(bench, { url: serviceUrl, rate, seconds, startId, outFile: cancelOutFile, topic: 'orders/cancelled' });
  const drained = await untilCancellationsFinished(url, tenant, 2 * cancels.length);
  const cpu = { api: apiCpu(), worker: workerCpu() };
  await stopSampling();
  if (!drained) bench.notes.push(`cancellation: not every cancellation finished within ${DRAIN_TIMEOUT_MS / 1000} s after the stream ended`);

  const cancelledAt = await supplierCancellationTimes(bench);
  const perOrder: number[] = [];
  let leftOpen = 0;
  let lastCancelled = 0;
  for (const order of cancels) {
    const times = (jobsOf.get(order.orderId) ?? []).map((jobId) => cancelledAt.get(jobId));
    leftOpen += times.filter((t) => t === undefined).length;
    if (order.status !== 200 || times.length === 0 || times.some((t) => t === undefined)) continue;
    const done = Math.max(...(times as number[]));
    lastCancelled = Math.max(lastCancelled, done);
    perOrder.push(done - order.sentAt);
  }
  perOrder.sort((a, b) => a - b);
  const answers = cancels.filter((o) => o.answeredAt !== null).map((o) => o.answeredAt! - o.sentAt).sort((a, b) => a - b);
  const spanSeconds = (lastCancelled - (cancels[0]?.sentAt ?? lastCancelled)) / 1000;
  bench.log(`  ${perOrder.length}/${cancels.length} orders cancelled at every supplier; per order p50 ${percentile(perOrder, 50)} ms, p99 ${percentile(perOrder, 99)} ms; webhook answer p99 ${percentile(answers, 99)} ms; ${leftOpen} supplier orders left open`);
  const perOrderCpuMs = (seconds: number) => round((seconds * 1000) / cancels.length, 2);
  bench.log(`  CPU per cancelled order: ${perOrderCpuMs(cpu.api.process)} ms in the API, ${perOrderCpuMs(cpu.worker.process)} ms in the worker, ${perOrderCpuMs(cpu.api.database)} ms in PostgreSQL`);
  if (leftOpen > 0) bench.notes.push(`cancellation: ${leftOpen} supplier orders of cancelled orders were left open`);
  return {
    'cancellation.orders_per_s': spanSeconds > 0 ? round(perOrder.length / spanSeconds) : 0,
    'cancellation.p50_ms': percentile(perOrder, 50),
    'cancellation.p99_ms': percentile(perOrder, 99),
    'cancellation.webhook_p99_ms': percentile(answers, 99),
    'cancellation.cpu_ms_per_order': perOrderCpuMs(cpu.api.process + cpu.worker.process + cpu.api.database),
    'cancellation.orders_sent': cancels.length,
    'cancellation.left_open': leftOpen,
  };
}

async function openLoop(bench: Bench, input: OpenLoopInput): Promise<SentOrder[]> {
  const result = await runTsForJson<OpenLoopResult>('bench/open-loop.ts', input, { logFile: path.join(bench.workspace.logs, `open-loop-${input.startId}-${input.topic === 'orders/cancelled' ? 'cancel' : 'create'}.log`) });
  if (result.failed > 0) bench.notes.push(`cancellation: ${result.failed} of ${result.sent} ${input.topic ?? 'orders/create'} webhooks not answered 200 (${JSON.stringify(result.outcomes)})`);
  return JSON.parse(readFileSync(input.outFile, 'utf8')) as SentOrder[];
}

/** Waits until the store has `expected` cancellations and none is pending, processing or failed. */
function untilCancellationsFinished(url: string, tenant: Tenant, expected: number): Promise<boolean> {
  return withClient(url, async (c) => {
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    for (;;) {
      const { rows } = await c.query(
        `select count(*) as total, count(*) filter (where status in ('pending', 'processing', 'failed')) as open
           from cancellations where reseller_store_id = $1 and created_at > now() - interval '10 minutes'`,
        [tenant.resellerStoreId],
      );
      if (Number(rows[0].total) >= expected && Number(rows[0].open) === 0) return true;
      if (Date.now() > deadline) return false;
      await delay(200);
    }
  });
}

/** When each supplier order was cancelled at its supplier, by the sync job id its idempotency key names. */
async function supplierCancellationTimes(bench: Bench): Promise<Map<string, number>> {
  const cancelledAt = new Map<string, number>();
  for (const supplier of SHOP.suppliers) {
    const store = encodeURIComponent(supplier.shopDomain);
    const orders = await bench.sandboxControl<SupplierOrder[]>('GET', `/stores/${store}/orders`);
    const jobOf = new Map(orders.filter((o) => o.idempotencyKey).map((o) => [String(o.id), o.idempotencyKey!.replace(/^sync-job:/, '')]));
    for (const cancellation of await bench.sandboxControl<CarriedOut[]>('GET', `/stores/${store}/cancellations`)) {
      const jobId = jobOf.get(cancellation.orderId);
      if (jobId !== undefined && !cancelledAt.has(jobId)) cancelledAt.set(jobId, Date.parse(cancellation.at));
    }
  }
  return cancelledAt;
}
