/**
 * Scale-out: two ROLE=api and two ROLE=worker processes (each `src/main.ts` in its own Node 24
 * process, as `npm start` runs it) on one database. Orders go in through both APIs; every job is
 * processed exactly once, by one of the two workers, and both workers share the work.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendWebhook, startSandbox, type Sandbox } from './sandbox/server.ts';
import { ApiClient } from './support/api.ts';
import { createTestDatabase, queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { recordSecret, registerLogs } from './support/leaks.ts';
import { lineOf, orderPosts } from './support/sync-jobs.ts';
import { ORDERS_PATH } from './support/webhooks.ts';
import { waitFor } from './support/wait.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ORDERS = 100;
const SUPPLIERS = 2;

interface ServiceProcess {
  name: string;
  child: ChildProcess;
  /** Every stdout and stderr line so far. */
  lines: string[];
  /** Base URL, for API processes. */
  url: string | null;
  /** Base URL of a worker's operations endpoints (/healthz, /readyz, /metrics). */
  opsUrl: string | null;
  exited: Promise<number | null>;
}

const dataDirs: string[] = [];

/** Starts `src/main.ts` with `env` and resolves once it logged 'service started'. */
function startProcess(name: string, env: Record<string, string>): Promise<ServiceProcess> {
  const dataDir = mkdtempSync(path.join(tmpdir(), `ors-${name}-`));
  dataDirs.push(dataDir);
  // The tsx loader in the service's own process, as `npm start` runs it: the tsx CLI would sit in
  // between and SIGKILL the service when it is slow (a loaded machine) to acknowledge a relayed SIGTERM.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  registerLogs(name, lines);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let url: string | null = null;
    let opsUrl: string | null = null;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      if (line.includes('"HTTP API listening"')) url = (JSON.parse(line) as { url: string }).url;
      if (line.includes('"operations endpoints listening"')) opsUrl = (JSON.parse(line) as { url: string }).url;
      if (line.includes('"service started"')) resolve({ name, child, lines, url, opsUrl, exited });
    });
    createInterface({ input: child.stderr! }).on('line', (line) => lines.push(line));
    void exited.then((code) => reject(new Error(`${name} exited (${code}) before it started:\n${lines.join('\n')}`)));
  });
}

/** Log lines of a process as objects (non-JSON lines, e.g. a Node warning on stderr, are skipped). */
function jsonLines(service: ServiceProcess): Record<string, unknown>[] {
  return service.lines.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await fn(items[index]!, index);
      }
    }),
  );
  return results;
}

let sandbox: Sandbox;
let databaseUrl: string;
let apis: ServiceProcess[] = [];
let workers: ServiceProcess[] = [];

beforeAll(async () => {
  sandbox = await startSandbox();
  databaseUrl = await createTestDatabase();
  const shared = {
    DATABASE_URL: databaseUrl,
    JWT_SECRET: randomBytes(32).toString('hex'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    PLATFORM_BASE_URL: sandbox.baseUrlTemplate,
    SYNC_RETRY_BASE_DELAY_MS: '100',
    AUTH_RATE_LIMIT_PER_MINUTE: '10000',
  };
  recordSecret('JWT_SECRET', shared.JWT_SECRET);
  recordSecret('ENCRYPTION_KEY', shared.ENCRYPTION_KEY);
  const started = await Promise.all([
    startProcess('api-1', { ...shared, ROLE: 'api' }),
    startProcess('api-2', { ...shared, ROLE: 'api' }),
    startProcess('worker-1', { ...shared, ROLE: 'worker' }),
    startProcess('worker-2', { ...shared, ROLE: 'worker' }),
  ]);
  apis = started.slice(0, 2);
  workers = started.slice(2);
}, 120_000);

afterAll(async () => {
  for (const service of [...apis, ...workers]) if (service.child.exitCode === null) service.child.kill('SIGKILL');
  await sandbox?.close();
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
});

describe('two API and two worker processes on one database', () => {
  it('serve HTTP only on the API processes and run queue workers only on the worker processes', () => {
    for (const api of apis) expect(api.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(new Set(apis.map((api) => api.url)).size).toBe(2);
    for (const worker of workers) {
      expect(worker.url).toBeNull();
      expect(jsonLines(worker).find((line) => line.msg === 'service started')).toMatchObject({ role: 'worker', url: null });
    }
  });

  it('process every job of orders sent through both APIs exactly once, spread over both workers', async () => {
    const [first, second] = apis.map((api) => new ApiClient(api.url!)) as [ApiClient, ApiClient];
    const user = await registerUser(first);
    // A session from one API process is good on the other: they share JWT_SECRET.
    expect((await second.get('/v1/auth/me', { token: user.token })).status).toBe(200);
    const webhookSecret = `whsec_${randomBytes(12).toString('hex')}`;
    const reseller = await createResellerStore(first, user.token, { webhookSecret });
    const suppliers = [
      await createSourceStore(first, user.token, reseller.id, { platform: 'custom', vendorTag: 'Acme' }),
      await createSourceStore(second, user.token, reseller.id, { platform: 'platform_b', vendorTag: 'Bolt' }),
    ];

    const orderIds = Array.from({ length: ORDERS }, (_, i) => 990_000_000 + i);
    const answers = await mapLimit(orderIds, 8, async (id, index) => {
      const payload = sandbox.buildOrderPayload('platform_a', { id, lines: [lineOf('Acme'), lineOf('Bolt')] });
      const api = apis[index % 2]!;
      const answer = await sendWebhook({ targetUrl: `${api.url}${ORDERS_PATH}`, shopDomain: reseller.shopDomain, secret: webhookSecret, topic: 'orders/create', payload });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return (answer.body as { syncJobIds: string[] }).syncJobIds;
    });
    const jobIds = answers.flat();
    expect(jobIds).toHaveLength(ORDERS * SUPPLIERS);
    expect(new Set(jobIds).size).toBe(ORDERS * SUPPLIERS);

    // Every job completes, at its first attempt.
    await waitFor(
      async () => {
        const [row] = await queryRows<{ done: string }>(databaseUrl, `select count(*) as done from sync_jobs where reseller_store_id = $1 and status = 'completed'`, [reseller.id]);
        return Number(row!.done) === ORDERS * SUPPLIERS;
      },
      90_000,
      `${ORDERS * SUPPLIERS} completed jobs`,
    );
    const jobs = await queryRows<{ id: string; source_store_id: string; external_order_id: string; status: string; attempts: number; source_order_id: string | null }>(
      databaseUrl,
      'select id, source_store_id, external_order_id, status, attempts, source_order_id from sync_jobs where reseller_store_id = $1',
      [reseller.id],
    );
    expect(jobs).toHaveLength(ORDERS * SUPPLIERS);
    expect(jobs.filter((job) => job.status !== 'completed' || job.attempts !== 1)).toEqual([]);
    expect(new Set(jobs.map((job) => `${job.external_order_id}/${job.source_store_id}`)).size).toBe(ORDERS * SUPPLIERS);

    // Exactly one order per (order, supplier) on the suppliers' stores: one POST each, no replay.
    for (const supplier of suppliers) {
      const ofSupplier = jobs.filter((job) => job.source_store_id === supplier.id);
      expect(ofSupplier).toHaveLength(ORDERS);
      const received = sandbox.ordersFor(supplier.shopDomain);
      expect(received).toHaveLength(ORDERS);
      expect(new Set(received.map((order) => order.idempotencyKey))).toEqual(new Set(ofSupplier.map((job) => `sync-job:${job.id}`)));
      const posts = orderPosts(sandbox, supplier.shopDomain);
      expect(posts).toHaveLength(ORDERS);
      expect(posts.filter((post) => post.idempotentReplay || post.status !== 201 && post.status !== 200)).toEqual([]);
      expect(new Set(ofSupplier.map((job) => job.source_order_id)).size).toBe(ORDERS);
    }

    // Every queue message completed and none was redelivered: one per job, and more for a job
    // postponed to its store's turn or, past the booking horizon, to its place in the store's line
    // (the two workers share each store's rate limit).
    const messages = await queryRows<{ job_id: string; state: string; retry_count: number; postponed: boolean }>(
      databaseUrl,
      `select data->>'syncJobId' as job_id, state, retry_count, data ?| array['turnAt', 'estimatedAt'] as postponed
         from pgboss.job where name = 'sync-job.process' and data->>'syncJobId' = any($1::text[])`,
      [jobIds],
    );
    expect(messages.filter((message) => message.state !== 'completed' || message.retry_count !== 0)).toEqual([]);
    expect(messages.filter((message) => !message.postponed)).toHaveLength(ORDERS * SUPPLIERS);

    // Each job was taken by exactly one worker process, and both workers took jobs.
    const takenBy = workers.map((worker) =>
      jsonLines(worker)
        .filter((line) => line.msg === 'attempt started' && typeof line.job_id === 'string')
        .map((line) => line.job_id as string),
    );
    const taken = takenBy.flat();
    expect(taken).toHaveLength(ORDERS * SUPPLIERS);
    expect(new Set(taken)).toEqual(new Set(jobIds));
    for (const [index, ids] of takenBy.entries()) expect(ids.length, `jobs taken by worker-${index + 1}`).toBeGreaterThan(0);
    const completedBy = workers.map((worker) => jsonLines(worker).filter((line) => line.msg === 'attempt completed').length);
    expect(completedBy.reduce((sum, count) => sum + count, 0)).toBe(ORDERS * SUPPLIERS);

    // Both APIs took orders, and only the API processes answered HTTP.
    for (const api of apis) {
      const webhooks = jsonLines(api).filter((line) => line.msg === 'request completed' && (line.req as { url?: string } | undefined)?.url === ORDERS_PATH);
      expect(webhooks.length, `${api.name} webhook requests`).toBe(ORDERS / 2);
    }
    for (const worker of workers) expect(jsonLines(worker).filter((line) => typeof line.request_id === 'string')).toEqual([]);

    // Each worker serves operations endpoints only, where its own job transitions are scraped.
    for (const worker of workers) {
      expect(worker.opsUrl, worker.name).toBeTruthy();
      const metrics = await (await fetch(`${worker.opsUrl}/metrics`)).text();
      expect(metrics).toMatch(/attempt_transitions_total\{kind="sync_job",status="completed"\} [1-9]/);
      expect((await fetch(`${worker.opsUrl}/readyz`)).status).toBe(200);
      expect((await fetch(`${worker.opsUrl}/v1/sync_jobs`)).status).toBe(404);
    }
  }, 180_000);

  it('stop gracefully on SIGTERM', async () => {
    const all = [...apis, ...workers];
    for (const service of all) service.child.kill('SIGTERM');
    const codes = await Promise.all(all.map((service) => service.exited));
    expect(codes).toEqual([0, 0, 0, 0]);
  }, 60_000);
});
