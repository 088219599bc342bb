/**
 * Cancellation: orders routed and placed at both suppliers, then cancelled on the storefront by an
 * open-loop stream of orders/cancelled webhooks; the time from a cancellation sent until every
 * supplier order of that order is cancelled at its supplier (the sandbox's record of the cancel
 * call it carried out). One API and one worker process, as e2e.
 *   cancellation.p50_ms / p99_ms: per storefront order, webhook sent to its last supplier order cancelled
 *   cancellation.left_open: supplier orders of cancelled storefront orders still open at the end (must be 0)
 *   cancellation.race_left_open: the same, for orders cancelled 50 ms after they were sent (while being routed and placed)
 *   cancellation.cpu_ms_per_order: CPU of the API, the worker and PostgreSQL from the first cancellation sent to the last carried out, per order
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { GiveUp, SHOP, percentile, round, runTsForJson } from '../common.ts';
import { medianOfRuns, setupTenant, supplierOrderTimes, untilJobsFinished, withClient, type Bench, type Tenant } from '../harness.ts';
import type { OpenLoopInput, OpenLoopResult, SentOrder } from '../open-loop.ts';
import { PLAN, type Results } from '../settings.ts';

const DRAIN_TIMEOUT_MS = 150_000;
/** How long after its orders/create each order's cancellation is sent in the race. */
const RACE_GAP_MS = 50;

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
  const race = await raceRun(bench, url, tenant, service.url!, 9_000_000_000);
  await service.stop();
  await worker.stop();
  return { ...medianOfRuns('cancellation', runs), ...race };
}

/**
 * Orders cancelled while they are being routed: an open loop of orders/create and, RACE_GAP_MS
 * behind it, one of their cancellations, at the same rate. Whatever each job's state when its
 * cancellation arrives (not yet routed, pending, in flight, placed), no supplier order may be left
 * open at the end.
 */
async function raceRun(bench: Bench, url: string, tenant: Tenant, serviceUrl: string, startId: number): Promise<Results> {
  const { rate, raceSeconds, latencyMs } = PLAN.cancellation;
  bench.log(`  race: ${rate} orders/s for ${raceSeconds} s, each cancelled ${RACE_GAP_MS} ms after it was sent (one sender)`);
  await bench.sandboxControl('POST', '/reset');
  for (const supplier of SHOP.suppliers) await bench.sandboxControl('POST', `/stores/${supplier.shopDomain}/faults`, { latencyMs });
  const since = new Date();
  const cancelOutFile = path.join(bench.workspace.tmp, 'cancellation-race-sent.json');
  const outFile = path.join(bench.workspace.tmp, 'cancellation-race-created.json');
  const routed = await openLoop(bench, { url: serviceUrl, rate, seconds: raceSeconds, startId, outFile, cancelAfterMs: RACE_GAP_MS, cancelOutFile });
  const cancels = JSON.parse(readFileSync(cancelOutFile, 'utf8')) as SentOrder[];
  const jobsDrained = await untilJobsFinished(url, tenant, DRAIN_TIMEOUT_MS);
  const cancellationsDrained = await untilCancellationsFinished(url, tenant, since);
  if (!jobsDrained || !cancellationsDrained) bench.notes.push('cancellation race: jobs or cancellations still open after the drain');
  // Only orders whose cancellation the service accepted count: one not answered 200 is noted by openLoop.
  const accepted = new Set(cancels.filter((order) => order.status === 200).map((order) => order.orderId));
  const jobIds = routed.filter((order) => accepted.has(order.orderId)).flatMap((order) => order.syncJobIds);
  const placed = await supplierOrderTimes(bench);
  const cancelledAt = await supplierCancellationTimes(bench);
  const placedOfRun = jobIds.filter((jobId) => placed.has(jobId));
  const leftOpen = placedOfRun.filter((jobId) => !cancelledAt.has(jobId)).length;
  const sentAt = new Map(routed.map((order) => [order.orderId, order.sentAt]));
  const gaps = cancels.map((cancel) => cancel.sentAt - (sentAt.get(cancel.orderId) ?? cancel.sentAt)).sort((a, b) => a - b);
  bench.log(`  race: cancellations sent ${percentile(gaps, 50)} ms (p99 ${percentile(gaps, 99)} ms) after their orders; ${accepted.size} of ${cancels.length} accepted; of their ${jobIds.length} jobs, ${placedOfRun.length} reached their supplier (${placedOfRun.length - leftOpen} of those cancelled there) and ${jobIds.length - placedOfRun.length} never did; ${leftOpen} left open`);
  if (leftOpen > 0) bench.notes.push(`cancellation race: ${leftOpen} supplier orders of cancelled orders were left open`);
  return {
    'cancellation.race_jobs': jobIds.length,
    'cancellation.race_never_placed': jobIds.length - placedOfRun.length,
    'cancellation.race_left_open': leftOpen,
  };
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
  const cancelsSentFrom = new Date();
  const cancels = await openLoop(bench, { url: serviceUrl, rate, seconds, startId, outFile: cancelOutFile, topic: 'orders/cancelled' });
  const drained = await untilCancellationsFinished(url, tenant, cancelsSentFrom);
  const cpu = { api: apiCpu(), worker: workerCpu() };
  await stopSampling();
  if (!drained) bench.notes.push(`cancellation: not every cancellation finished within ${DRAIN_TIMEOUT_MS / 1000} s after the stream ended`);

  const cancelledAt = await supplierCancellationTimes(bench);
  const perOrder: number[] = [];
  let leftOpen = 0;
  let lastCancelled = 0;
  for (const order of cancels) {
    // A cancellation not answered 200 is noted by openLoop; its supplier orders are not the service's to cancel.
    if (order.status !== 200) continue;
    const times = (jobsOf.get(order.orderId) ?? []).map((jobId) => cancelledAt.get(jobId));
    leftOpen += times.filter((t) => t === undefined).length;
    if (times.length === 0 || times.some((t) => t === undefined)) continue;
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

/** Waits until none of the store's cancellations created since `since` is pending, processing or failed. */
function untilCancellationsFinished(url: string, tenant: Tenant, since: Date): Promise<boolean> {
  return withClient(url, async (c) => {
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    for (;;) {
      const { rows } = await c.query(
        `select count(*) as open from cancellations
          where reseller_store_id = $1 and created_at >= $2 and status in ('pending', 'processing', 'failed')`,
        [tenant.resellerStoreId, since],
      );
      if (Number(rows[0].open) === 0) return true;
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
