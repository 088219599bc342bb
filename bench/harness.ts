/**
 * What every phase of `npm run bench` works with: one PostgreSQL, the sandbox, service processes
 * and load generators, all as child processes, plus the run's notes and memory peaks. The run
 * (bench/run.ts) makes one `Bench` and hands it to each phase; nothing here is module state.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, createWriteStream, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { loadConfig } from '../src/config/index.ts';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded.ts';
import { connectOrm } from '../src/database.ts';
import { Queue } from '../src/queue/queue.ts';
import { ATTEMPT_QUEUES } from '../src/workers/kinds.ts';
import { createLogger } from '../src/shared/logger.ts';
import { GiveUp, MemorySampler, SHOP, clusterCpuSeconds, cpuSeconds, round, runTsForJson, spawnTs, waitFor, waitForLog, type Child } from './common.ts';
import type { LoadInput, LoadResult } from './load.ts';
import { CPU_PROF, EXPLAIN_MS, KEEP, PGSTAT, SERVICE_NODE_ARGS, type Results } from './settings.ts';

export type Log = (text: string) => void;

/** Log lines stamped with the seconds since the run started. */
export function runLog(startedAt: Date): Log {
  return (text) => console.log(`[${((Date.now() - startedAt.getTime()) / 1000).toFixed(0).padStart(3)} s] ${text}`);
}

/** The run's temporary folder: the database cluster, the service's data, every process's log, CPU profiles. */
export interface Workspace {
  tmp: string;
  logs: string;
  profiles: string;
}

export function createWorkspace(): Workspace {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'ors-bench-'));
  chmodSync(tmp, 0o711); // PostgreSQL runs as its own system user and must reach its folder inside
  const logs = path.join(tmp, 'logs');
  mkdirSync(logs);
  return { tmp, logs, profiles: path.join(tmp, 'profiles') };
}

/** The environment of every service process of the run (as deployed), and the worker concurrency it implies. */
export function serviceEnvironment(workspace: Workspace): { env: Record<string, string>; workerConcurrency: number } {
  const env = {
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    DATA_DIR: path.join(workspace.tmp, 'service-data'),
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    // The store look-up cache is off by default (exactness across API processes); measured with it on.
    WEBHOOK_STORE_CACHE_TTL_MS: process.env.WEBHOOK_STORE_CACHE_TTL_MS ?? '1000',
    JWT_SECRET: randomBytes(36).toString('base64'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };
  return { env, workerConcurrency: loadConfig({ ...process.env, ...env }).workerConcurrency };
}

/** The processes the run started (the database, the sandbox, services, generators), to stop them all at the end. */
export class Infrastructure {
  readonly running: Child[] = [];
  #db: EmbeddedDatabase | null = null;

  constructor(private readonly workspace: Workspace) {}

  /** Starts PostgreSQL (with pg_stat_statements when BENCH_PGSTAT=1) and the sandbox. */
  async start(): Promise<{ db: EmbeddedDatabase; sandboxUrl: string; sandboxPid: number }> {
    const dataDir = path.join(this.workspace.tmp, 'postgres');
    let db = await startEmbeddedPostgres({ dataDir });
    this.#db = db;
    if (PGSTAT) {
      // Diagnostics: per-statement timings need pg_stat_statements loaded at server start.
      await withClient(db.url(), async (c) => {
        await c.query(`alter system set shared_preload_libraries = ${EXPLAIN_MS === null ? `'pg_stat_statements'` : `'pg_stat_statements', 'auto_explain'`}`);
        // Planning too: the hot statements are prepared (src/db/prepared.ts), so `plans` < `calls` shows them on generic plans.
        await c.query('alter system set pg_stat_statements.track_planning = on');
        if (EXPLAIN_MS === null) return;
        // BENCH_EXPLAIN_MS: the plans of statements slower than that, with timings, in the server's log.
        for (const setting of [`auto_explain.log_min_duration = ${EXPLAIN_MS}`, 'auto_explain.log_analyze = on', 'auto_explain.log_buffers = on',
          'auto_explain.log_nested_statements = on']) await c.query(`alter system set ${setting}`);
      });
      await db.stop();
      const serverLog = EXPLAIN_MS === null ? null : createWriteStream(path.join(this.workspace.logs, 'postgres.log'));
      db = await startEmbeddedPostgres({ dataDir, ...(serverLog && { onLog: (line: string) => void serverLog.write(`${line}\n`) }) });
      this.#db = db;
      await withClient(db.url(), (c) => c.query('create extension if not exists pg_stat_statements'));
    }
    const sandboxPort = await freePort();
    const nodeArgs = CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${this.workspace.profiles}`, '--cpu-prof-name=sandbox-${pid}.cpuprofile'] : [];
    const sandbox = this.track(
      spawnTs('test/sandbox/main.ts', { env: { PORT: String(sandboxPort), HOST: '127.0.0.1' }, logFile: path.join(this.workspace.logs, 'sandbox.log'), nodeArgs }),
    );
    await waitForLog(sandbox, 'sandbox platform listening');
    return { db, sandboxUrl: `http://127.0.0.1:${sandboxPort}`, sandboxPid: sandbox.process.pid! };
  }

  track(child: Child): Child {
    this.running.push(child);
    return child;
  }

  async stopAll(): Promise<void> {
    // A process profiled (BENCH_CPU_PROF) writes its profile only when it exits of its own accord.
    await Promise.all(this.running.map((child) => child.stop(CPU_PROF ? 'SIGTERM' : 'SIGKILL').catch(() => {})));
    await this.#db?.stop().catch(() => {});
  }
}

export interface ServiceProcess {
  child: Child;
  url: string | null;
  memory: MemorySampler;
  stop: () => Promise<void>;
}

export interface Tenant {
  token: string;
  ownerId: string;
  resellerStoreId: string;
  sourceStoreIds: string[];
}

/** One run's context, handed to each phase. */
export class Bench {
  /** Peak resident memory of each service process, in MiB, by process name. */
  readonly peaks: Record<string, number> = {};
  /** Databases of the running phase, dropped when it ends. */
  readonly #phaseDatabases: string[] = [];

  constructor(
    readonly workspace: Workspace,
    readonly db: EmbeddedDatabase,
    readonly sandboxUrl: string,
    /** The sandbox's process: it shares the machine's CPUs with the service (see `sandboxCpuWindow`). */
    private readonly sandboxPid: number,
    private readonly infrastructure: Infrastructure,
    readonly service: { env: Record<string, string>; workerConcurrency: number },
    /** What the printed table and results.json say below the figures. */
    readonly notes: string[],
    readonly log: Log,
  ) {}

  track(child: Child): Child {
    return this.infrastructure.track(child);
  }

  async createDatabase(name: string): Promise<string> {
    await withClient(this.db.url(), (c) => c.query(`create database ${name}`));
    this.#phaseDatabases.push(name);
    return this.db.url(name);
  }

  /**
   * Drops the phase's databases (kept with BENCH_KEEP=1, for their statistics: pg_stat_user_tables
   * and the like) and checkpoints, so the next phase does not share the server with their autovacuum
   * or the previous phase's checkpoint.
   */
  async settleAfterPhase(): Promise<void> {
    const phaseDatabases = this.#phaseDatabases.splice(0);
    if (!KEEP) for (const name of phaseDatabases) await withClient(this.db.url(), (c) => c.query(`drop database ${name} with (force)`));
    await withClient(this.db.url(), (c) => c.query('checkpoint'));
    await delay(2000);
  }

  /**
   * BENCH_PGSTAT=1: samples what the database's sessions are doing every 50 ms during a run and logs
   * the most common (state, wait event, query) triples: where requests wait when the CPU is idle.
   */
  sampleActivity(label: string): () => Promise<void> {
    if (!PGSTAT) return async () => {};
    const counts = new Map<string, number>();
    let samples = 0;
    let stopped = false;
    const done = withClient(this.db.url(), async (c) => {
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
      this.log(`  pg_stat_activity during ${label} (average sessions per sample):`);
      for (const [key, n] of top) this.log(`    ${(n / samples).toFixed(2).padStart(6)}  ${key}`);
      const statements = await withClient(this.db.url(), async (c) =>
        (await c.query(
          `select calls, round(total_exec_time::numeric, 0) as total_ms, round(mean_exec_time::numeric, 3) as mean_ms, rows,
             plans, round(total_plan_time::numeric, 0) as plan_ms,
             left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 110) as query
           from pg_stat_statements order by total_exec_time + total_plan_time desc limit 15`,
        )).rows as { calls: string; total_ms: string; mean_ms: string; rows: string; plans: string; plan_ms: string; query: string }[]);
      this.log(`  pg_stat_statements during ${label} (calls, total execution ms, mean ms, rows, plans, total planning ms):`);
      for (const row of statements) {
        this.log(`    ${row.calls.padStart(7)} ${row.total_ms.padStart(7)} ${row.mean_ms.padStart(8)} ${row.rows.padStart(7)} ${row.plans.padStart(7)} ${row.plan_ms.padStart(6)}  ${row.query}`);
      }
    };
  }

  /** CPU seconds used by a process and by the database cluster between start and end. */
  cpuWindow(pid: number): () => { process: number; database: number } {
    const postmaster = Number(readFileSync(path.join(this.workspace.tmp, 'postgres', 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const before = { process: cpuSeconds(pid), database: clusterCpuSeconds(postmaster) };
    return () => ({ process: cpuSeconds(pid) - before.process, database: clusterCpuSeconds(postmaster) - before.database });
  }

  /** The sandbox's CPU seconds from now until the returned function is called. */
  sandboxCpuWindow(): () => number {
    const before = cpuSeconds(this.sandboxPid);
    return () => cpuSeconds(this.sandboxPid) - before;
  }

  async startServiceProcess(name: string, databaseUrl: string, env: Record<string, string>): Promise<ServiceProcess> {
    const port = await freePort();
    const { profiles } = this.workspace;
    const child = this.track(spawnTs('src/main.ts', {
      env: { ...this.service.env, PLATFORM_BASE_URL: `${this.sandboxUrl}/{shopDomain}`, DATABASE_URL: databaseUrl, PORT: String(port), ...env },
      logFile: path.join(this.workspace.logs, `service-${name}.log`),
      nodeArgs: [
        ...SERVICE_NODE_ARGS,
        ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`, `--cpu-prof-name=${name}-\${pid}.cpuprofile`] : []),
      ],
    }));
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
        this.peaks[name] = Math.max(this.peaks[name] ?? 0, memory.stop());
        await child.stop();
      },
    };
  }

  load(name: string, input: LoadInput): Promise<LoadResult> {
    return runTsForJson<LoadResult>('bench/load.ts', input, { logFile: path.join(this.workspace.logs, `load-${name}.log`) });
  }

  sandboxControl<T>(method: string, route: string, body?: unknown): Promise<T> {
    return api<T>(this.sandboxUrl, method, `/_sandbox${route}`, body);
  }

  reportLoad(label: string, r: LoadResult): void {
    this.log(`  ${label}: ${round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.ok} ok, ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
    if (r.non2xx + r.errors + r.timeouts > 0) this.notes.push(`${label}: ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`);
  }

  reportCpu(label: string, cpu: { process: number; database: number }, count: number, unit = 'request'): void {
    this.log(`  ${label}: CPU per ${unit} ${round((cpu.process * 1000) / count, 2)} ms in the process, ${round((cpu.database * 1000) / count, 2)} ms in PostgreSQL`);
  }
}

export async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** The service's migrations and queue schema, for a database the service itself never starts on. */
export async function migrateDatabase(url: string): Promise<void> {
  const orm = await connectOrm(url, 2);
  const queue = await Queue.start({ connectionString: url, logger: createLogger('warn'), supervise: false, queues: ATTEMPT_QUEUES });
  await queue.stop();
  await orm.close();
}

/**
 * Waits until none of the tenant's jobs is pending, processing or failed (waiting for a retry),
 * twice a second; false when `timeoutMs` passed first. Read from the trigger-kept counters the stats
 * use: a count over the jobs cost PostgreSQL 10 ms a poll during a drain, CPU the phase then charged
 * to the service.
 */
export function untilJobsFinished(url: string, tenant: Tenant, timeoutMs: number): Promise<boolean> {
  return withClient(url, async (c) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await c.query(
        `select coalesce(sum(count), 0) as open from store_status_counts
          where reseller_store_id = $1 and kind = 'sync_job' and status in ('pending', 'processing', 'failed')`,
        [tenant.resellerStoreId],
      );
      if (Number(rows[0].open) === 0) return true;
      if (Date.now() > deadline) return false;
      await delay(500);
    }
  });
}

export async function api<T>(base: string, method: string, route: string, body?: unknown, token?: string): Promise<T> {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...(token && { authorization: `Bearer ${token}` }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${route} answered ${response.status}: ${text}`);
  return (text ? JSON.parse(text) : null) as T;
}

/** A reseller with the bench storefront and its two suppliers, through the public API. */
export async function setupTenant(base: string): Promise<Tenant> {
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

/** When each supplier order of the bench's shop was placed, by the sync job id its idempotency key names. */
export async function supplierOrderTimes(bench: Bench): Promise<Map<string, number>> {
  const created = new Map<string, number>();
  for (const supplier of SHOP.suppliers) {
    const orders = await bench.sandboxControl<{ idempotencyKey: string | null; createdAt: string }[]>('GET', `/stores/${supplier.shopDomain}/orders`);
    for (const order of orders) if (order.idempotencyKey) created.set(order.idempotencyKey.replace(/^sync-job:/, ''), Date.parse(order.createdAt));
  }
  return created;
}

/**
 * The figures of repeated runs: each numeric figure is the median of the runs; each latency figure
 * (`…_ms`), and each figure `withRuns` names, also gets its runs (`<key>.runs`) and spread
 * (`<key>.spread`, largest minus smallest).
 */
export function medianOfRuns(phase: string, runs: Results[], withRuns: (key: string) => boolean = () => false): Results {
  const median: Results = {};
  for (const key of Object.keys(runs[0] ?? {})) {
    const values = runs.map((run) => run[key]);
    if (!values.every((value): value is number => typeof value === 'number')) {
      median[key] = values.join('; ');
      continue;
    }
    median[key] = round(medianOf(values), 3);
    if (key.endsWith('_ms') || withRuns(key)) {
      median[`${key}.runs`] = values.join(', ');
      median[`${key}.spread`] = round(Math.max(...values) - Math.min(...values), 3);
    }
  }
  median[`${phase}.runs`] = runs.length;
  return median;
}

export function medianOf(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
