/**
 * `npm run bench`: the service under load on one embedded PostgreSQL with the sandbox platform.
 * Every program runs in its own process: the service (src/main.ts with the tsx loader, as `npm
 * start`), the sandbox (test/sandbox/main.ts), the load generators (bench/load.ts,
 * bench/open-loop.ts) and the baselines (bench/baseline-ingest.ts, bench/baseline-queue.ts). Each
 * phase has its own database.
 * Prints a table and writes bench/results.json.
 *
 *   BENCH_PHASES=ingest,e2e,processing,scale   run only these phases
 *   BENCH_QUICK=1                              shorter runs and smaller counts (a smoke test)
 *   BENCH_CPU_PROF=1                           service processes write V8 CPU profiles (kept)
 *   BENCH_KEEP=1                               keep the temporary folder (logs, database)
 *   BENCH_LOG_LEVEL=info                       the service's LOG_LEVEL (default info, as deployed)
 *   BENCH_SERVICE_NODE_ARGS="--cpu-prof"      extra node flags for the service processes (after npm start's)
 *   BENCH_PGSTAT=1                             log what PostgreSQL sessions wait on, and the top
 *                                              statements (pg_stat_statements), for the measured runs
 * Any service variable in the environment (WORKER_CONCURRENCY, ...) is passed through.
 */
import { execSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { loadConfig } from '../src/config/index.ts';
import { deleteDataDir, freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded.ts';
import { connectOrm } from '../src/db/orm.ts';
import { Queue } from '../src/queue/queue.ts';
import { createLogger } from '../src/shared/logger.ts';
import { GiveUp, MemorySampler, ROOT, clusterCpuSeconds, cpuSeconds, SHOP, orderTemplate, percentile, round, runTsForJson, spawnTs, waitFor, waitForLog, webhookHeaders, type Child } from './common.ts';
import type { LoadInput, LoadResult } from './load.ts';
import type { QueueBaselineInput, QueueBaselineResult } from './baseline-queue.ts';
import type { OpenLoopInput, OpenLoopResult, SentOrder } from './open-loop.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const PHASES = new Set((process.env.BENCH_PHASES ?? 'ingest,e2e,processing,scale').split(',').map((p) => p.trim()));
const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
const KEEP = process.env.BENCH_KEEP === '1' || CPU_PROF;
const PGSTAT = process.env.BENCH_PGSTAT === '1';
/** The service runs with the node flags `npm start` gives it (package.json), then any from BENCH_SERVICE_NODE_ARGS. */
const SERVICE_NODE_ARGS = [
  ...(JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.start as string).split(' ').filter((arg) => /^--(?!import)/.test(arg)),
  ...(process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean),
];

const PLAN = {
  ingest: { connections: 32, seconds: QUICK ? 5 : 15, warmupSeconds: QUICK ? 1 : 3 },
  e2e: { rate: 200, seconds: QUICK ? 5 : 20, warmupSeconds: QUICK ? 1 : 3, latencyMs: 20 },
  processing: { jobs: QUICK ? 1_000 : 10_000 },
  scale: { small: 10_000, large: QUICK ? 100_000 : 1_000_000, connections: 4, seconds: QUICK ? 3 : 8, warmupSeconds: QUICK ? 1 : 2 },
  /** Raised per-store pacing for runs against the sandbox, which has no rate limit. */
  pacing: '*=2000:2000',
};

const TARGETS: Record<string, { op: '>=' | '<='; value: number }> = {
  'ingest.ratio': { op: '>=', value: 0.6 },
  'ingest.p99_ms': { op: '<=', value: 50 },
  'e2e.p99_ms': { op: '<=', value: 1500 },
  'processing.ratio': { op: '>=', value: 0.5 },
  'scale.list_p99_growth': { op: '<=', value: 1.5 },
  'scale.stats_p99_ms': { op: '<=', value: 50 },
  rss_mb: { op: '<=', value: 256 },
};

const startedAt = new Date();
const tmp = mkdtempSync(path.join(os.tmpdir(), 'ors-bench-'));
chmodSync(tmp, 0o711); // PostgreSQL runs as its own system user and must reach its folder inside
const logs = path.join(tmp, 'logs');
const profiles = path.join(tmp, 'profiles');
mkdirSync(logs);
const results: Record<string, number | string | null> = {};
const notes: string[] = [];
const peaks: Record<string, number> = {};
const log = (text: string) => console.log(`[${((Date.now() - startedAt.getTime()) / 1000).toFixed(0).padStart(3)} s] ${text}`);

const secrets = { JWT_SECRET: randomBytes(36).toString('base64'), ENCRYPTION_KEY: randomBytes(32).toString('base64') };
const serviceEnvBase = {
  NODE_ENV: 'production',
  HOST: '127.0.0.1',
  DATA_DIR: path.join(tmp, 'service-data'),
  LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
  // The store look-up cache is off by default (exactness across API processes); measured with it on.
  WEBHOOK_STORE_CACHE_TTL_MS: process.env.WEBHOOK_STORE_CACHE_TTL_MS ?? '1000',
  ...secrets,
};
const workerConcurrency = loadConfig({ ...process.env, ...serviceEnvBase }).workerConcurrency;

// ---------------------------------------------------------------------------------------------
// Infrastructure: one PostgreSQL, the sandbox, service processes

let db: EmbeddedDatabase;
let sandbox: Child;
let sandboxUrl: string;
const running: Child[] = [];

/** Databases of the running phase, dropped when it ends. */
const phaseDatabases: string[] = [];

async function createDatabase(name: string): Promise<string> {
  await withClient(db.url(), (c) => c.query(`create database ${name}`));
  phaseDatabases.push(name);
  return db.url(name);
}

/**
 * Drops the phase's databases and checkpoints, so the next phase does not share the server with
 * their autovacuum or the previous phase's checkpoint.
 */
async function settleAfterPhase(): Promise<void> {
  for (const name of phaseDatabases.splice(0)) await withClient(db.url(), (c) => c.query(`drop database ${name} with (force)`));
  await withClient(db.url(), (c) => c.query('checkpoint'));
  await delay(2000);
}

/** The service's migrations and queue schema, for a database the service itself never starts on. */
async function migrateDatabase(url: string): Promise<void> {
  const orm = await connectOrm(url, 2);
  const queue = await Queue.start({ connectionString: url, logger: createLogger('warn'), supervise: false });
  await queue.stop();
  await orm.close();
}

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/**
 * BENCH_PGSTAT=1: samples what the database's sessions are doing every 50 ms during a run and logs
 * the most common (state, wait event, query) triples: where requests wait when the CPU is idle.
 */
function sampleActivity(label: string): () => Promise<void> {
  if (!PGSTAT) return async () => {};
  const counts = new Map<string, number>();
  let samples = 0;
  let stopped = false;
  const done = withClient(db.url(), async (c) => {
    await c.query('select pg_stat_statements_reset()');
    while (!stopped) {
      const { rows } = await c.query(
        `select state, coalesce(wait_event_type || ':' || wait_event, 'cpu') as wait, left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 100) as query
         from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid() and datname like 'bench_%'`,
      );
      samples++;
      for (const row of rows) {
        const key = `${row.state} | ${row.wait} | ${row.query}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      await delay(50);
    }
  });
  return async () => {
    stopped = true;
    await done;
    const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 15);
    log(`  pg_stat_activity during ${label} (average sessions per sample):`);
    for (const [key, n] of top) log(`    ${(n / samples).toFixed(2).padStart(6)}  ${key}`);
    const statements = await withClient(db.url(), async (c) =>
      (await c.query(
        `select calls, round(total_exec_time::numeric, 0) as total_ms, round(mean_exec_time::numeric, 3) as mean_ms, rows,
           left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 110) as query
         from pg_stat_statements order by total_exec_time desc limit 15`,
      )).rows as { calls: string; total_ms: string; mean_ms: string; rows: string; query: string }[]);
    log(`  pg_stat_statements during ${label} (calls, total ms, mean ms, rows):`);
    for (const row of statements) log(`    ${row.calls.padStart(7)} ${row.total_ms.padStart(7)} ${row.mean_ms.padStart(8)} ${row.rows.padStart(7)}  ${row.query}`);
  };
}

/** CPU seconds used by a process and by the database cluster between start and end. */
function cpuWindow(pid: number): () => { process: number; database: number } {
  const postmaster = Number(readFileSync(path.join(tmp, 'postgres', 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const before = { process: cpuSeconds(pid), database: clusterCpuSeconds(postmaster) };
  return () => ({ process: cpuSeconds(pid) - before.process, database: clusterCpuSeconds(postmaster) - before.database });
}

interface ServiceProcess {
  child: Child;
  url: string | null;
  memory: MemorySampler;
  stop: () => Promise<void>;
}

async function startServiceProcess(name: string, databaseUrl: string, env: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort();
  const child = spawnTs('src/main.ts', {
    env: { ...serviceEnvBase, PLATFORM_BASE_URL: `${sandboxUrl}/{shopDomain}`, DATABASE_URL: databaseUrl, PORT: String(port), ...env },
    logFile: path.join(logs, `service-${name}.log`),
    nodeArgs: [
      ...SERVICE_NODE_ARGS,
      ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`, `--cpu-prof-name=${name}-\${pid}.cpuprofile`] : []),
    ],
  });
  running.push(child);
  const memory = new MemorySampler(child.process.pid!);
  // A worker serves /healthz on its PORT too, once its queue consumers run: nothing is measured before.
  await waitFor(`${name} to answer /healthz`, async () => {
    if (child.process.exitCode !== null) throw new GiveUp(`${name} exited with ${child.process.exitCode}; see ${child.logFile}`);
    return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
  }, 120_000, 200);
  const url = env.ROLE === 'worker' ? null : `http://127.0.0.1:${port}`;
  return {
    child,
    url,
    memory,
    stop: async () => {
      peaks[name] = memory.stop();
      await child.stop();
    },
  };
}

const E2E_DRAIN_TIMEOUT_MS = 150_000;

/**
 * Waits until none of the tenant's jobs is pending, processing or failed (waiting for a retry),
 * polling a cheap index-only count twice a second; false when `timeoutMs` passed first.
 */
function untilJobsFinished(url: string, tenant: Tenant, timeoutMs: number): Promise<boolean> {
  return withClient(url, async (c) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await c.query(
        `select count(*) as open from sync_jobs where owner_id = $1 and status in ('pending', 'processing', 'failed')`,
        [tenant.ownerId],
      );
      if (Number(rows[0].open) === 0) return true;
      if (Date.now() > deadline) return false;
      await delay(500);
    }
  });
}

async function api<T>(base: string, method: string, route: string, body?: unknown, token?: string): Promise<T> {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...(token && { authorization: `Bearer ${token}` }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${route} answered ${response.status}: ${text}`);
  return (text ? JSON.parse(text) : null) as T;
}

interface Tenant {
  token: string;
  ownerId: string;
  resellerStoreId: string;
  sourceStoreIds: string[];
}

/** A reseller with the bench storefront and its two suppliers, through the public API. */
async function setupTenant(base: string): Promise<Tenant> {
  const { accessToken: token } = await api<{ accessToken: string }>(base, 'POST', '/v1/auth/register', {
    email: `bench-${randomBytes(4).toString('hex')}@reseller.example`,
    password: 'correct horse battery staple',
  });
  const ownerId = (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { sub: string }).sub;
  const shop = await api<{ id: string }>(base, 'POST', '/v1/reseller_stores', {
    name: 'Bench Storefront',
    platform: SHOP.reseller.platform,
    shopDomain: SHOP.reseller.shopDomain,
    accessToken: 'shpat_bench_storefront',
    webhookSecret: SHOP.reseller.secret,
  }, token);
  const sourceStoreIds: string[] = [];
  for (const supplier of SHOP.suppliers) {
    const source = await api<{ id: string }>(base, 'POST', `/v1/reseller_stores/${shop.id}/source_stores`, {
      name: supplier.vendorTag,
      platform: supplier.platform,
      shopDomain: supplier.shopDomain,
      accessToken: `token_${supplier.shopDomain}`,
      webhookSecret: supplier.secret,
      vendorTag: supplier.vendorTag,
      pricingMode: 'percentage',
      pricingConfig: { type: 'percentage', value: 25 },
    }, token);
    sourceStoreIds.push(source.id);
  }
  return { token, ownerId, resellerStoreId: shop.id, sourceStoreIds };
}

function load(name: string, input: LoadInput): Promise<LoadResult> {
  return runTsForJson<LoadResult>('bench/load.ts', input, { logFile: path.join(logs, `load-${name}.log`) });
}

async function sandboxControl<T>(method: string, route: string, body?: unknown): Promise<T> {
  return api<T>(sandboxUrl, method, `/_sandbox${route}`, body);
}

function reportLoad(label: string, r: LoadResult): void {
  log(`  ${label}: ${round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.ok} ok, ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  if (r.non2xx + r.errors + r.timeouts > 0) notes.push(`${label}: ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`);
}

function reportCpu(label: string, cpu: { process: number; database: number }, count: number, unit = 'request'): void {
  log(`  ${label}: CPU per ${unit} ${round((cpu.process * 1000) / count, 2)} ms in the process, ${round((cpu.database * 1000) / count, 2)} ms in PostgreSQL`);
}

// ---------------------------------------------------------------------------------------------
// Phases

/** The median time to routed of the orders sent in each 2-second slice of the stream: shows a backlog building or steady. */
function logLatencyOverTime(sent: SentOrder[], created: Map<string, number>, firstSentAt: number): void {
  const slices = new Map<number, number[]>();
  for (const order of sent) {
    const times = order.syncJobIds.map((id) => created.get(id));
    if (times.length === 0 || times.some((t) => t === undefined)) continue;
    const slice = Math.floor((order.sentAt - firstSentAt) / 2000);
    if (!slices.has(slice)) slices.set(slice, []);
    slices.get(slice)!.push(Math.max(...(times as number[])) - order.sentAt);
  }
  const medians = [...slices].sort(([a], [b]) => a - b).map(([slice, values]) => `${slice * 2}s:${percentile(values.sort((a, b) => a - b), 50)}`);
  log(`  median ms to routed by send time: ${medians.join(' ')}`);
}

async function ingestPhase(): Promise<void> {
  log('ingest: signed orders/create webhooks, 2 suppliers each, 32 connections');
  const serviceDb = await createDatabase('bench_ingest');
  const baselineDb = await createDatabase('bench_ingest_baseline');
  await migrateDatabase(baselineDb);
  const { connections, seconds, warmupSeconds } = PLAN.ingest;
  // The baseline needs only the ids of a reseller's stores; the service creates them through its API.
  const tenant = { ownerId: 'usr_bench', resellerStoreId: 'rst_bench', sourceStoreIds: ['sst_bench_1', 'sst_bench_2'] };

  const baselinePort = await freePort();
  const baseline = spawnTs('bench/baseline-ingest.ts', {
    env: {
      DATABASE_URL: baselineDb,
      PORT: String(baselinePort),
      WEBHOOK_SECRET: SHOP.reseller.secret,
      OWNER_ID: tenant.ownerId,
      RESELLER_STORE_ID: tenant.resellerStoreId,
      SOURCE_STORE_IDS: tenant.sourceStoreIds.join(','),
    },
    logFile: path.join(logs, 'baseline-ingest.log'),
  });
  running.push(baseline);
  await waitForLog(baseline, 'baseline listening');
  const baselineUrl = `http://127.0.0.1:${baselinePort}`;
  const warmBaseline = await load('ingest-baseline-warmup', { url: baselineUrl, mode: 'orders', path: '/v1/orders/webhook', connections, durationSeconds: warmupSeconds, startId: 1_000_000_000 });
  const baselineCpu = cpuWindow(baseline.process.pid!);
  const base = await load('ingest-baseline', { url: baselineUrl, mode: 'orders', path: '/v1/orders/webhook', connections, durationSeconds: seconds, startId: warmBaseline.nextId });
  const baseCpu = baselineCpu();
  await baseline.stop();
  reportLoad('baseline', base);
  reportCpu('baseline', baseCpu, base.ok);

  const service = await startServiceProcess('ingest', serviceDb, { ROLE: 'api' });
  await setupTenant(service.url!);
  const warmService = await load('ingest-service-warmup', { url: service.url!, mode: 'orders', path: '/v1/orders/webhook', connections, durationSeconds: warmupSeconds, startId: 2_000_000_000 });
  const stopSampling = sampleActivity('the service run');
  const serviceCpu = cpuWindow(service.child.process.pid!);
  const svc = await load('ingest-service', { url: service.url!, mode: 'orders', path: '/v1/orders/webhook', connections, durationSeconds: seconds, startId: warmService.nextId });
  const svcCpu = serviceCpu();
  await stopSampling();
  reportLoad('service ', svc);
  reportCpu('service ', svcCpu, svc.ok);
  await service.stop();

  const rows = await withClient(serviceDb, async (c) => Number((await c.query('select count(*) from sync_jobs')).rows[0].count));
  const baselineRows = await withClient(baselineDb, async (c) => Number((await c.query('select count(*) from sync_jobs')).rows[0].count));
  log(`  sync jobs written: service ${rows}, baseline ${baselineRows}`);
  if (rows < svc.ok * 2) notes.push(`ingest: the service answered ${svc.ok} orders but wrote only ${rows} jobs`);

  Object.assign(results, {
    'ingest.service_rps': round(svc.rps),
    'ingest.baseline_rps': round(base.rps),
    'ingest.ratio': round(svc.rps / base.rps, 3),
    'ingest.p50_ms': svc.p50,
    'ingest.p99_ms': svc.p99,
    'ingest.baseline_p50_ms': base.p50,
    'ingest.baseline_p99_ms': base.p99,
    'ingest.service_cpu_ms_per_req': round((svcCpu.process * 1000) / svc.ok, 2),
    'ingest.service_db_cpu_ms_per_req': round((svcCpu.database * 1000) / svc.ok, 2),
    'ingest.baseline_cpu_ms_per_req': round((baseCpu.process * 1000) / base.ok, 2),
    'ingest.baseline_db_cpu_ms_per_req': round((baseCpu.database * 1000) / base.ok, 2),
  });
}

async function e2ePhase(): Promise<void> {
  const { rate, seconds, warmupSeconds, latencyMs } = PLAN.e2e;
  log(`e2e: open loop, ${rate} orders/s for ${seconds} s after a ${warmupSeconds} s warm-up, sandbox answering in ${latencyMs} ms, per-store pacing raised to PLATFORM_PACING=${PLAN.pacing}, one API and one worker process`);
  notes.push(`e2e and processing run with PLATFORM_PACING=${PLAN.pacing}: the sandbox has no rate limit, and the default per-store pacing (2-5 calls/s) would cap each supplier far below ${rate} orders/s`);
  const url = await createDatabase('bench_e2e');
  // As deployed for load (README, "External PostgreSQL, several API and worker processes"): an API
  // process and a worker process, so the two can use both cores.
  const service = await startServiceProcess('e2e-api', url, { ROLE: 'api' });
  const worker = await startServiceProcess('e2e-worker', url, { ROLE: 'worker', PLATFORM_PACING: PLAN.pacing });
  const tenant = await setupTenant(service.url!);
  await sandboxControl('POST', '/reset');
  for (const supplier of SHOP.suppliers) await sandboxControl('POST', `/stores/${supplier.shopDomain}/faults`, { latencyMs });

  // As for ingest, a warm-up at the same rate first (JIT, connection pools), drained before the measured stream.
  await runTsForJson<OpenLoopResult>(
    'bench/open-loop.ts',
    { url: service.url!, rate, seconds: warmupSeconds, startId: 2_900_000_000, outFile: path.join(tmp, 'e2e-warmup.json') } satisfies OpenLoopInput,
    { logFile: path.join(logs, 'open-loop-warmup.log') },
  );
  if (!(await untilJobsFinished(url, tenant, E2E_DRAIN_TIMEOUT_MS))) throw new GiveUp('e2e: the warm-up orders were not routed in time');
  const outFile = path.join(tmp, 'e2e-sent.json');
  const stopSampling = sampleActivity('the stream');
  const sentResult = await runTsForJson<OpenLoopResult>(
    'bench/open-loop.ts',
    { url: service.url!, rate, seconds, startId: 3_000_000_000, outFile } satisfies OpenLoopInput,
    { logFile: path.join(logs, 'open-loop.log') },
  );
  log(`  sent ${sentResult.sent} webhooks, answers ${JSON.stringify(sentResult.outcomes)}; sender lag at worst ${sentResult.maxLagMs} ms`);
  if (sentResult.failed > 0) notes.push(`e2e: ${sentResult.failed} of ${sentResult.sent} webhooks not answered 200 (${JSON.stringify(sentResult.outcomes)})`);
  const sent = JSON.parse(readFileSync(outFile, 'utf8')) as SentOrder[];
  const drained = await untilJobsFinished(url, tenant, E2E_DRAIN_TIMEOUT_MS);
  await stopSampling();
  if (!drained) notes.push(`e2e: not every job finished within ${E2E_DRAIN_TIMEOUT_MS / 1000} s after the stream ended`);
  await service.stop();
  await worker.stop();

  const created = new Map<string, number>();
  for (const supplier of SHOP.suppliers) {
    const orders = await sandboxControl<{ idempotencyKey: string | null; createdAt: string }[]>('GET', `/stores/${supplier.shopDomain}/orders`);
    for (const order of orders) if (order.idempotencyKey) created.set(order.idempotencyKey.replace(/^sync-job:/, ''), Date.parse(order.createdAt));
  }
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
  logLatencyOverTime(sent, created, sentResult.firstSentAt);
  perOrder.sort((a, b) => a - b);
  perSupplierOrder.sort((a, b) => a - b);
  const answers = sent.filter((o) => o.answeredAt !== null).map((o) => o.answeredAt! - o.sentAt).sort((a, b) => a - b);
  const spanSeconds = (lastCreated - sentResult.firstSentAt) / 1000;
  log(`  ${routed}/${sent.length} orders fully routed; per order p50 ${percentile(perOrder, 50)} ms, p99 ${percentile(perOrder, 99)} ms; webhook answer p99 ${percentile(answers, 99)} ms`);
  if (routed < sent.length) notes.push(`e2e: ${sent.length - routed} of ${sent.length} orders were not fully routed`);
  Object.assign(results, {
    'e2e.orders_per_s': round(routed / spanSeconds),
    'e2e.p50_ms': percentile(perOrder, 50),
    'e2e.p99_ms': percentile(perOrder, 99),
    'e2e.supplier_order_p99_ms': percentile(perSupplierOrder, 99),
    'e2e.webhook_p99_ms': percentile(answers, 99),
    'e2e.orders_routed': routed,
    'e2e.orders_sent': sent.length,
  });
}

async function processingPhase(): Promise<void> {
  const { jobs } = PLAN.processing;
  log(`processing: ${jobs} queued sync jobs drained against the sandbox (answering at once), WORKER_CONCURRENCY=${workerConcurrency}`);
  const url = await createDatabase('bench_processing');
  const apiProcess = await startServiceProcess('processing-api', url, { ROLE: 'api' });
  const tenant = await setupTenant(apiProcess.url!);
  const queued = await load('processing-queue', {
    url: apiProcess.url!, mode: 'orders', path: '/v1/orders/webhook', connections: 16, amount: jobs / 2, startId: 4_000_000_000,
  });
  await apiProcess.stop();
  const pending = await withClient(url, async (c) => Number((await c.query(`select count(*) from sync_jobs where status = 'pending'`)).rows[0].count));
  log(`  queued ${pending} jobs through ${queued.ok} webhooks`);
  await sandboxControl('POST', '/reset');

  const worker = await startServiceProcess('processing-worker', url, { ROLE: 'worker', PLATFORM_PACING: PLAN.pacing });
  const workerCpu = cpuWindow(worker.child.process.pid!);
  const stopSampling = sampleActivity('the drain');
  const drained = await untilJobsFinished(url, tenant, 300_000);
  const drainCpu = workerCpu();
  await stopSampling();
  await worker.stop();
  const span = await withClient(url, async (c) =>
    (await c.query(`select count(*) filter (where status = 'completed') as completed, count(*) filter (where status = 'dead') as dead,
       extract(epoch from max(completed_at) - min(completed_at)) as seconds from sync_jobs`)).rows[0] as { completed: string; dead: string; seconds: string });
  const completed = Number(span.completed);
  const jobsPerSecond = (completed - 1) / Number(span.seconds);
  if (!drained || completed < pending) notes.push(`processing: ${completed} of ${pending} jobs completed (${span.dead} dead)`);
  log(`  service: ${completed} completed in ${round(Number(span.seconds))} s: ${round(jobsPerSecond)} jobs/s`);
  reportCpu('service', drainCpu, completed, 'job');

  const baselineUrl = await createDatabase('bench_processing_baseline');
  const outFile = path.join(tmp, 'baseline-queue.json');
  const baselineChild = spawnTs('bench/baseline-queue.ts', {
    args: [JSON.stringify({ databaseUrl: baselineUrl, count: jobs, concurrency: workerConcurrency, outFile } satisfies QueueBaselineInput)],
    logFile: path.join(logs, 'baseline-queue.log'),
  });
  running.push(baselineChild);
  await waitForLog(baselineChild, 'draining', 120_000);
  const baselineCpu = cpuWindow(baselineChild.process.pid!);
  await waitForLog(baselineChild, 'drained', 300_000);
  const baselineDrainCpu = baselineCpu();
  await baselineChild.exited;
  const baseline = JSON.parse(readFileSync(outFile, 'utf8')) as QueueBaselineResult;
  log(`  bare pg-boss, no-op handlers: ${round(baseline.jobsPerSecond)} jobs/s`);
  reportCpu('bare pg-boss', { process: baseline.cpuSeconds, database: baselineDrainCpu.database }, jobs, 'job');
  Object.assign(results, {
    'processing.jobs_per_s': round(jobsPerSecond),
    'processing.baseline_jobs_per_s': round(baseline.jobsPerSecond),
    'processing.ratio': round(jobsPerSecond / baseline.jobsPerSecond, 3),
    'processing.service_cpu_ms_per_job': round((drainCpu.process * 1000) / completed, 2),
    'processing.service_db_cpu_ms_per_job': round((drainCpu.database * 1000) / completed, 2),
    'processing.baseline_cpu_ms_per_job': round((baseline.cpuSeconds * 1000) / jobs, 2),
    'processing.baseline_db_cpu_ms_per_job': round((baselineDrainCpu.database * 1000) / jobs, 2),
  });
}

/** Sortable ids like the service's (prefix + UUIDv7 hex), for row `i` created at `baseMs + i`. */
const syntheticId = (prefix: string) =>
  `'${prefix}_' || lpad(to_hex($1::bigint + i), 12, '0') || '7' || lpad(to_hex(i % 4096), 3, '0') || '8' || substr(md5(i::text), 1, 15)`;

async function insertSyntheticJobs(url: string, tenant: Tenant, from: number, to: number, baseMs: number): Promise<void> {
  const chunks: [number, number][] = [];
  for (let start = from; start <= to; start += 100_000) chunks.push([start, Math.min(to, start + 99_999)]);
  const params = (start: number, end: number) => [baseMs, start, end, tenant.ownerId, tenant.resellerStoreId, tenant.sourceStoreIds[0], tenant.sourceStoreIds[1]];
  // Jobs and audit entries on two connections at once: the machine has two cores.
  await Promise.all([
    withClient(url, async (c) => {
      for (const [start, end] of chunks) {
        await c.query(
          `insert into sync_jobs (id, owner_id, reseller_store_id, source_store_id, external_order_id, origin, status, attempts, source_order_id,
             completed_at, dead_at, error_message, retries_left, "order", queue_message_id, version, created_at, updated_at)
           select ${syntheticId('job')}, $4, $5, case when i % 2 = 0 then $6 else $7 end, (5000000000 + i / 2)::text, 'webhook',
             case when i % 100 = 0 then 'dead' else 'completed' end, case when i % 100 = 0 then 4 else 1 end, (100000 + i)::text,
             case when i % 100 = 0 then null else ts end, case when i % 100 = 0 then ts else null end,
             case when i % 100 = 0 then 'platform_b bench-acme.example: POST /orders answered 500' else null end,
             case when i % 100 = 0 then 0 else 3 end, t."order", null, 3, ts, ts
           from generate_series($2::int, $3::int) as i
           cross join lateral (select to_timestamp(($1::bigint + i) / 1000.0) as ts) as x
           cross join (select "order" from sync_jobs order by id desc limit 1) as t`,
          params(start, end),
        );
      }
      await c.query('vacuum analyze sync_jobs');
    }),
    withClient(url, async (c) => {
      for (const [start, end] of chunks) {
        await c.query(
          `insert into audit_entries (id, owner_id, reseller_store_id, action, resource_type, resource_id, metadata, actor_id, created_at)
           select ${syntheticId('aud')}, $4, $5, 'sync_job.created', 'sync_job', ${syntheticId('job')},
             jsonb_build_object('externalOrderId', (5000000000 + i / 2)::text, 'sourceStoreId', case when i % 2 = 0 then $6 else $7 end, 'origin', 'webhook', 'webhookId', md5(i::text)),
             'system', to_timestamp(($1::bigint + i) / 1000.0)
           from generate_series($2::int, $3::int) as i`,
          params(start, end),
        );
      }
      await c.query('vacuum analyze audit_entries');
    }),
  ]);
}

async function scalePhase(): Promise<void> {
  const { small, large, connections, seconds, warmupSeconds } = PLAN.scale;
  log(`scale: list p99 with ${small} and ${large} jobs (and as many audit entries), ${connections} connections`);
  const url = await createDatabase('bench_scale');
  const service = await startServiceProcess('scale', url, { ROLE: 'api' });
  const tenant = await setupTenant(service.url!);
  // One real job, whose snapshot and order documents the synthetic rows copy.
  const { body, signature } = orderTemplate().render(6_000_000_000);
  const first = await fetch(`${service.url}/v1/orders/webhook`, { method: 'POST', headers: webhookHeaders(signature, 'bench-scale-seed'), body });
  if (!first.ok) throw new Error(`seed webhook answered ${first.status}: ${await first.text()}`);
  const baseMs = Date.now() - large - 60_000;

  const measure = async (size: number) => {
    const out: Record<string, LoadResult> = {};
    const routes = [
      ['sync_jobs', '/v1/sync_jobs?limit=20'],
      ['audit_log', '/v1/audit_log'],
      // Not part of the growth figure: a filter on an action the log hardly has.
      ['audit_log_by_action', '/v1/audit_log?action=sync_job.retried'],
      // The operator's store overview: counted from store_status_counts, not from the jobs.
      ['stats', `/v1/reseller_stores/${tenant.resellerStoreId}/stats`],
    ] as const;
    for (const [key, route] of routes) {
      out[key] = await load(`scale-${key}-${size}`, {
        url: service.url!, mode: 'get', path: route, connections, durationSeconds: seconds, warmupSeconds, headers: { authorization: `Bearer ${tenant.token}` },
      });
      reportLoad(`${route} with ${size} jobs`, out[key]);
    }
    return out;
  };

  let t = Date.now();
  await insertSyntheticJobs(url, tenant, 1, small - 1, baseMs);
  log(`  inserted ${small} jobs and audit entries in ${round((Date.now() - t) / 1000)} s`);
  const atSmall = await measure(small);
  t = Date.now();
  await insertSyntheticJobs(url, tenant, small, large - 1, baseMs);
  log(`  inserted up to ${large} jobs and audit entries in ${round((Date.now() - t) / 1000)} s`);
  const atLarge = await measure(large);
  await service.stop();

  const growth = {
    sync_jobs: atLarge.sync_jobs!.p99 / atSmall.sync_jobs!.p99,
    audit_log: atLarge.audit_log!.p99 / atSmall.audit_log!.p99,
  };
  Object.assign(results, {
    'scale.list_p99_growth': round(Math.max(growth.sync_jobs, growth.audit_log), 2),
    'scale.sync_jobs_p99_growth': round(growth.sync_jobs, 2),
    'scale.audit_log_p99_growth': round(growth.audit_log, 2),
    'scale.sync_jobs_p99_ms_small': atSmall.sync_jobs!.p99,
    'scale.sync_jobs_p99_ms_large': atLarge.sync_jobs!.p99,
    'scale.audit_log_p99_ms_small': atSmall.audit_log!.p99,
    'scale.audit_log_p99_ms_large': atLarge.audit_log!.p99,
    'scale.audit_log_by_action_p99_ms_small': atSmall.audit_log_by_action!.p99,
    'scale.audit_log_by_action_p99_ms_large': atLarge.audit_log_by_action!.p99,
    'scale.sync_jobs_rps_large': round(atLarge.sync_jobs!.rps),
    'scale.audit_log_rps_large': round(atLarge.audit_log!.rps),
    'scale.stats_p99_ms': atLarge.stats!.p99,
    'scale.jobs_large': large,
  });
}

// ---------------------------------------------------------------------------------------------
// Output

function machine() {
  const cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  let free = '';
  try {
    free = execSync('free -g', { encoding: 'utf8' }).trim();
  } catch {
    free = `${round(os.totalmem() / 2 ** 30)} GiB total`;
  }
  return { nproc: os.availableParallelism(), cpu, memory_gib: round(os.totalmem() / 2 ** 30), free, node: process.version, platform: `${os.type()} ${os.release()}`, loadavg_at_start: os.loadavg().map((l) => round(l, 2)) };
}

function printTable(): void {
  const rows = Object.entries(results).map(([key, value]) => {
    const target = TARGETS[key];
    const verdict = !target || typeof value !== 'number' ? '' : (target.op === '>=' ? value >= target.value : value <= target.value) ? 'met' : 'NOT met';
    return [key, String(value), target ? `${target.op} ${target.value}` : '', verdict];
  });
  const header = ['metric', 'value', 'target', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 1 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  console.log(`\n${line(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
  if (notes.length > 0) console.log(`\nNotes:\n${notes.map((n) => `- ${n}`).join('\n')}`);
}

// ---------------------------------------------------------------------------------------------

let exitCode = 0;
const info = machine();
log(`machine: ${info.nproc} CPUs (${info.cpu}), ${info.memory_gib} GiB, load average ${info.loadavg_at_start.join(' ')}; Node ${info.node}`);
if (QUICK) notes.push('BENCH_QUICK=1: shortened runs and counts; not the benchmark figures');
const stopAll = async () => {
  await Promise.all(running.map((child) => child.stop('SIGKILL').catch(() => {})));
  await db?.stop().catch(() => {});
};
process.once('SIGINT', () => void stopAll().then(() => process.exit(130)));
try {
  db = await startEmbeddedPostgres({ dataDir: path.join(tmp, 'postgres') });
  if (PGSTAT) {
    // Diagnostics: per-statement timings need pg_stat_statements loaded at server start.
    await withClient(db.url(), (c) => c.query(`alter system set shared_preload_libraries = 'pg_stat_statements'`));
    await db.stop();
    db = await startEmbeddedPostgres({ dataDir: path.join(tmp, 'postgres') });
    await withClient(db.url(), (c) => c.query('create extension if not exists pg_stat_statements'));
  }
  const sandboxPort = await freePort();
  sandbox = spawnTs('test/sandbox/main.ts', { env: { PORT: String(sandboxPort), HOST: '127.0.0.1' }, logFile: path.join(logs, 'sandbox.log') });
  running.push(sandbox);
  await waitForLog(sandbox, 'sandbox platform listening');
  sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  log(`embedded PostgreSQL on port ${db.port}, sandbox at ${sandboxUrl}, logs in ${logs}`);

  for (const [phase, run] of [['ingest', ingestPhase], ['e2e', e2ePhase], ['processing', processingPhase], ['scale', scalePhase]] as const) {
    if (!PHASES.has(phase)) continue;
    await run();
    await settleAfterPhase();
  }
  results.rss_mb = Math.max(0, ...Object.values(peaks));
  for (const [name, mb] of Object.entries(peaks)) results[`rss_mb.${name}`] = mb;
} catch (error) {
  console.error(`\nbenchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  console.error(`logs: ${logs}`);
  exitCode = 1;
} finally {
  await stopAll();
  await delay(100);
}

const finishedAt = new Date();
const output = {
  date: startedAt.toISOString(),
  duration_s: round((finishedAt.getTime() - startedAt.getTime()) / 1000),
  machine: { ...info, loadavg_at_end: os.loadavg().map((l) => round(l, 2)) },
  settings: { ...PLAN, service_node_args: SERVICE_NODE_ARGS.join(" "), worker_concurrency: workerConcurrency, log_level: serviceEnvBase.LOG_LEVEL, quick: QUICK },
  notes,
  ...results,
};
writeFileSync(path.join(ROOT, 'bench', 'results.json'), `${JSON.stringify(output, null, 2)}\n`);
printTable();
console.log(`\nwrote bench/results.json (${output.duration_s} s)`);
if (CPU_PROF) console.log(`CPU profiles in ${profiles}`);
if (KEEP || exitCode !== 0) console.log(`kept ${tmp}`);
else {
  deleteDataDir(path.join(tmp, 'service-data'));
  deleteDataDir(path.join(tmp, 'postgres'));
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(exitCode);
