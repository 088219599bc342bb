/**
 * Flow control across processes and tenants: several worker processes sharing one rate-limited
 * supplier (flow.*), and a flash sale to such a supplier while another reseller's orders must go
 * straight through (fairness.*). The supplier is a sandbox store enforcing PLAN.limit (a token
 * bucket answering 429 Retry-After: 1), and the service paces platform_a stores the same.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { signPayload } from '../../src/webhooks/signature.ts';
import { buildOrderPayload } from '../../test/sandbox/payloads.ts';
import { SHOP, percentile, round, waitFor, webhookHeaders } from '../common.ts';
import { api, untilJobsFinished, withClient, type Bench, type Tenant } from '../harness.ts';
import { PLAN, type Results } from '../settings.ts';

interface ShopSpec {
  platform: string;
  shopDomain: string;
  secret: string;
}

interface SupplierSpec extends ShopSpec {
  vendorTag: string;
}

/** A user with one reseller store and its suppliers, through the public API. */
async function createTenant(base: string, reseller: ShopSpec, suppliers: SupplierSpec[]): Promise<Tenant> {
  const { accessToken: token } = await api<{ accessToken: string }>(base, 'POST', '/v1/auth/register', {
    email: `bench-${randomBytes(4).toString('hex')}@reseller.example`,
    password: 'correct horse battery staple',
  });
  const ownerId = (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { sub: string }).sub;
  const shop = await api<{ id: string }>(base, 'POST', '/v1/reseller_stores', {
    name: reseller.shopDomain, platform: reseller.platform, shopDomain: reseller.shopDomain, accessToken: `token_${reseller.shopDomain}`, webhookSecret: reseller.secret,
  }, token);
  const sourceStoreIds: string[] = [];
  for (const supplier of suppliers) {
    const source = await api<{ id: string }>(base, 'POST', `/v1/reseller_stores/${shop.id}/source_stores`, {
      name: supplier.vendorTag, platform: supplier.platform, shopDomain: supplier.shopDomain, accessToken: `token_${supplier.shopDomain}`,
      webhookSecret: supplier.secret, vendorTag: supplier.vendorTag, pricingMode: 'percentage', pricingConfig: { type: 'percentage', value: 25 },
    }, token);
    sourceStoreIds.push(source.id);
  }
  return { token, ownerId, resellerStoreId: shop.id, sourceStoreIds };
}

/** The bench storefront (SHOP.reseller, whose orders the load generators sign) with one supplier of the vendor 'Acme' only: one job per order. */
const acmeOnly = (shopDomain: string): SupplierSpec => ({ platform: 'platform_a', shopDomain, secret: `whsec_${shopDomain}`, vendorTag: 'Acme' });

/** The order POSTs a sandbox store received, oldest first. */
async function supplierPosts(bench: Bench, shopDomain: string): Promise<{ status: number | null; at: number }[]> {
  const requests = await bench.sandboxControl<{ method: string; path: string; status: number | null; at: string }[]>('GET', `/stores/${shopDomain}/requests`);
  return requests.filter((r) => r.method === 'POST' && /\/orders(\.json)?$/.test(r.path)).map((r) => ({ status: r.status, at: Date.parse(r.at) }));
}

export async function flowPhase(bench: Bench): Promise<Results> {
  const { workers, orders } = PLAN.flow;
  const { perSecond, burst } = PLAN.limit;
  const pacing = `platform_a=${perSecond}:${burst}`;
  bench.log(`flow: ${orders} orders to one platform_a supplier enforcing ${perSecond}/s (burst ${burst}, 429 Retry-After: 1), PLATFORM_PACING=${pacing}, one API and ${workers} worker processes`);
  const url = await bench.createDatabase('bench_flow');
  const apiProcess = await bench.startServiceProcess('flow-api', url, { ROLE: 'api' });
  const workerProcesses = [];
  for (let i = 1; i <= workers; i++) workerProcesses.push(await bench.startServiceProcess(`flow-worker-${i}`, url, { ROLE: 'worker', PLATFORM_PACING: pacing }));
  const supplier = acmeOnly('bench-flow-supplier.example');
  const tenant = await createTenant(apiProcess.url!, SHOP.reseller, [supplier]);
  await bench.sandboxControl('POST', '/reset');
  await bench.sandboxControl('POST', `/stores/${supplier.shopDomain}/faults`, { rateLimit: PLAN.limit });

  const sent = await bench.load('flow-orders', { url: apiProcess.url!, mode: 'orders', path: '/v1/orders/webhook', connections: 8, amount: orders, startId: 7_000_000_000 });
  const drained = await untilJobsFinished(url, tenant, 120_000 + (orders / perSecond) * 1000);
  if (!drained) bench.notes.push(`flow: not every job finished`);
  const posts = await supplierPosts(bench, supplier.shopDomain);
  const accepted = posts.filter((post) => post.status === 201).map((post) => post.at);
  const steady = accepted.slice(burst);
  const achieved = ((steady.length - 1) * 1000) / (steady.at(-1)! - steady[0]!);
  const refused = posts.filter((post) => post.status === 429);
  const attempts = await withClient(url, async (c) =>
    (await c.query(`select count(*) filter (where attempts > 1) as retried, count(*) filter (where status <> 'completed') as unfinished from sync_jobs`)).rows[0] as { retried: string; unfinished: string });
  bench.log(`  ${sent.ok} orders in, ${accepted.length} supplier orders placed; after the burst ${round(achieved, 2)} orders/s of ${perSecond}; ${refused.length} answers 429 (the last ${refused.length ? round((refused.at(-1)!.at - posts[0]!.at) / 1000, 1) : '-'} s in); ${attempts.retried} jobs needed more than one attempt, ${attempts.unfinished} unfinished`);
  for (const process of [apiProcess, ...workerProcesses]) await process.stop();
  return {
    'flow.workers': workers,
    'flow.ratio': round(achieved / perSecond, 3),
    'flow.rate_limited': refused.length,
    'flow.orders': accepted.length,
  };
}


export async function fairnessPhase(bench: Bench): Promise<Results> {
  const { backlog, quietRate, seconds } = PLAN.fairness;
  const { perSecond, burst } = PLAN.limit;
  const pacing = `platform_a=${perSecond}:${burst}`;
  bench.log(`fairness: a flash sale of ${backlog} orders to one supplier limited to ${perSecond}/s; another reseller sends ${quietRate} orders/s to its own supplier while it arrives, then for ${seconds} s during its backlog; one API and one worker process`);
  const url = await bench.createDatabase('bench_fairness');
  const apiProcess = await bench.startServiceProcess('fairness-api', url, { ROLE: 'api' });
  const worker = await bench.startServiceProcess('fairness-worker', url, { ROLE: 'worker', PLATFORM_PACING: pacing });
  const busySupplier = acmeOnly('bench-flash-supplier.example');
  await createTenant(apiProcess.url!, SHOP.reseller, [busySupplier]);
  const quietReseller = { platform: 'platform_a', shopDomain: 'bench-quiet-storefront.example', secret: 'whsec_bench_quiet_storefront' };
  const quietSupplier: SupplierSpec = { platform: 'custom', shopDomain: 'bench-quiet-supplier.example', secret: 'whsec_quiet', vendorTag: 'Quiet' };
  await createTenant(apiProcess.url!, quietReseller, [quietSupplier]);
  await bench.sandboxControl('POST', '/reset');
  await bench.sandboxControl('POST', `/stores/${busySupplier.shopDomain}/faults`, { rateLimit: PLAN.limit });

  const quietOrders = new QuietOrders(apiProcess.url!, quietReseller, quietRate);
  // The flash sale arrives as fast as the API takes it; the quiet reseller's orders go on meanwhile
  // (the backlog building), then for PLAN.fairness.seconds while the backlog of its jobs waits its turns.
  let arriving = true;
  const flashSale = bench.load('fairness-flash-sale', { url: apiProcess.url!, mode: 'orders', path: '/v1/orders/webhook', connections: 16, amount: backlog, startId: 8_000_000_000 });
  const duringArrival = quietOrders.sendWhile(() => arriving);
  const flash = await flashSale.finally(() => (arriving = false));
  const sentDuringArrival = await duringArrival;
  bench.reportLoad('flash sale', flash);
  const backlogAtStart = await openJobs(url);
  const duringBacklog = await quietOrders.sendFor(seconds);
  const sent = [...sentDuringArrival, ...duringBacklog];
  await waitFor('the quiet orders at their supplier', async () => (await bench.sandboxControl<unknown[]>('GET', `/stores/${quietSupplier.shopDomain}/orders`)).length >= sent.length, 60_000, 500);
  const placed = new Map(
    (await bench.sandboxControl<{ idempotencyKey: string; createdAt: string }[]>('GET', `/stores/${quietSupplier.shopDomain}/orders`)).map((o) => [o.idempotencyKey.replace(/^sync-job:/, ''), Date.parse(o.createdAt)]),
  );
  const latenciesOf = (orders: QuietOrder[]) => orders.map((order) => placed.get(order.jobId)! - order.sentAt).sort((a, b) => a - b);
  const arrival = latenciesOf(sentDuringArrival);
  const latencies = latenciesOf(duringBacklog);
  const backlogLeft = await openJobs(url);
  const busyPlaced = (await supplierPosts(bench, busySupplier.shopDomain)).filter((post) => post.status === 201).length;
  bench.log(`  while the flash sale arrived (${round(flash.durationSeconds, 1)} s): ${arrival.length} quiet orders, webhook to supplier order p50 ${percentile(arrival, 50)} ms, p99 ${percentile(arrival, 99)} ms`);
  bench.log(`  during the backlog (${backlogAtStart} jobs waiting at the start, ${backlogLeft} at the end): ${latencies.length} quiet orders, p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${latencies.at(-1)} ms; the flash sale's supplier got ${busyPlaced} orders in all`);
  await apiProcess.stop();
  await worker.stop();
  return {
    'fairness.p99_ms': percentile(latencies, 99),
    'fairness.p50_ms': percentile(latencies, 50),
    'fairness.arrival_p99_ms': percentile(arrival, 99),
    'fairness.backlog_jobs': flash.ok,
  };
}

interface QuietOrder {
  sentAt: number;
  jobId: string;
}

/** The quiet reseller's orders (one line for its one supplier), sent from the runner at a steady rate. */
class QuietOrders {
  #next = 0;

  constructor(
    private readonly apiUrl: string,
    private readonly reseller: ShopSpec,
    private readonly perSecond: number,
  ) {}

  async sendFor(seconds: number): Promise<QuietOrder[]> {
    const until = Date.now() + seconds * 1000;
    return this.sendWhile(() => Date.now() < until);
  }

  async sendWhile(going: () => boolean): Promise<QuietOrder[]> {
    const sent: QuietOrder[] = [];
    const started = Date.now();
    for (let i = 0; going(); i++) {
      await delay(Math.max(0, started + (i * 1000) / this.perSecond - Date.now()));
      const order = await this.#send();
      if (order) sent.push(order);
    }
    return sent;
  }

  async #send(): Promise<QuietOrder | null> {
    const id = 9_000_000_000 + this.#next++;
    const body = JSON.stringify(buildOrderPayload('platform_a', { id, lines: [{ sku: 'Q-1', title: 'Quiet thing', vendor: 'Quiet', quantity: 1, price: '5.00' }] }));
    const sentAt = Date.now();
    const response = await fetch(`${this.apiUrl}/v1/orders/webhook`, {
      method: 'POST',
      headers: { ...webhookHeaders(signPayload(body, this.reseller.secret), `bench-quiet-${id}`), 'x-platform-shop-domain': this.reseller.shopDomain },
      body,
    });
    const answer = (await response.json()) as { syncJobIds?: string[] };
    return response.ok && answer.syncJobIds?.[0] ? { sentAt, jobId: answer.syncJobIds[0] } : null;
  }
}

function openJobs(url: string): Promise<number> {
  return withClient(url, async (c) => Number((await c.query(`select count(*) from sync_jobs where status <> 'completed'`)).rows[0].count));
}
