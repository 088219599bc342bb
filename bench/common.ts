/**
 * Shared pieces of the benchmark: child processes, the order payload every load generator signs,
 * readiness waits, memory sampling. Nothing here is imported by the service.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { buildOrderPayload, cancelledOrder } from '../test/sandbox/payloads.ts';
import { signPayload } from '../src/webhooks/signature.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The storefront and the two suppliers every phase routes orders between. */
export const SHOP = {
  reseller: { platform: 'platform_a', shopDomain: 'bench-storefront.example', secret: 'whsec_bench_storefront_0123456789' },
  suppliers: [
    { platform: 'platform_b', shopDomain: 'bench-acme.example', secret: 'whsec_bench_acme', vendorTag: 'Acme' },
    { platform: 'custom', shopDomain: 'bench-bolt.example', secret: 'whsec_bench_bolt', vendorTag: 'Bolt Bros' },
  ],
} as const;

const ID_SENTINEL = 987_654_321_987;

/** The storefront topics the load generators send: an order placed, or the same order cancelled. */
export type StorefrontTopic = 'orders/create' | 'orders/cancelled';

/**
 * A platform_a orders/create body with one line per supplier (or, for `orders/cancelled`, the same
 * order with its `cancelled_at`), as JSON text with a placeholder for the order id, so a load
 * generator can stamp out distinct orders cheaply.
 */
export function orderTemplate(topic: StorefrontTopic = 'orders/create'): { render: (orderId: number) => { body: string; signature: string } } {
  const order = buildOrderPayload('platform_a', {
    id: ID_SENTINEL,
    currency: 'USD',
    email: 'customer@example.com',
    lines: [
      { sku: 'ANV-1', title: 'Anvil, 20 kg', vendor: 'Acme', quantity: 1, price: '125.00' },
      { sku: 'BLT-8', title: 'Bolt M8 (box)', vendor: 'Bolt Bros', quantity: 3, price: '10.00' },
    ],
  });
  const payload = topic === 'orders/cancelled' ? cancelledOrder('platform_a', order) : order;
  const [head, tail] = JSON.stringify(payload).split(String(ID_SENTINEL));
  if (head === undefined || tail === undefined || tail.includes(String(ID_SENTINEL))) throw new Error('bad order template');
  return {
    render: (orderId) => {
      const body = `${head}${orderId}${tail}`;
      return { body, signature: signPayload(body, SHOP.reseller.secret) };
    },
  };
}

export function webhookHeaders(signature: string, webhookId: string, topic: StorefrontTopic = 'orders/create'): Record<string, string> {
  return {
    'content-type': 'application/json',
    'x-platform-hmac-sha256': signature,
    'x-platform-shop-domain': SHOP.reseller.shopDomain,
    'x-platform-topic': topic,
    'x-platform-webhook-id': webhookId,
  };
}

export interface Child {
  process: ChildProcess;
  logFile: string;
  exited: Promise<number | null>;
  stop: (signal?: NodeJS.Signals) => Promise<void>;
}

/**
 * Runs a TypeScript entry point in its own Node process (the `tsx` loader in the same process, so
 * the pid is the program's own and its memory can be read). Output goes to `logFile`.
 */
export function spawnTs(script: string, options: { env?: Record<string, string>; logFile: string; nodeArgs?: string[]; args?: string[] }): Child {
  const fd = openSync(options.logFile, 'a');
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', script, ...(options.args ?? [])], {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    process: child,
    logFile: options.logFile,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const timeout = delay(30_000).then(() => 'timeout' as const);
      if ((await Promise.race([exited, timeout])) === 'timeout') {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** Runs a TypeScript program to completion and returns the JSON it printed last on stdout. */
export function runTsForJson<T>(script: string, input: unknown, options: { logFile: string; env?: Record<string, string> }): Promise<T> {
  return new Promise((resolve, reject) => {
    const errFd = openSync(options.logFile, 'a');
    const child = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify(input)], {
      cwd: ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', errFd],
    });
    closeSync(errFd);
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.once('error', reject);
    child.once('exit', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`${script} exited with ${code}; see ${options.logFile}`));
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`${script} printed no JSON result; see ${options.logFile}`));
      }
    });
  });
}

/** Thrown by a probe to stop waiting at once (other probe errors mean "not yet"). */
export class GiveUp extends Error {}

export async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 60_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch((error: unknown) => {
      if (error instanceof GiveUp) throw error;
      return null;
    });
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(everyMs);
  }
}

/** Waits until a child's log has a line containing `text` (or the child died). */
export async function waitForLog(child: Child, text: string, timeoutMs = 60_000): Promise<void> {
  await waitFor(`"${text}" in ${child.logFile}`, async () => {
    if (child.process.exitCode !== null) throw new GiveUp(`process exited with ${child.process.exitCode}; see ${child.logFile}`);
    return readFileSync(child.logFile, 'utf8').includes(text);
  }, timeoutMs);
}

/**
 * Samples a process's resident memory (VmRSS) and the kernel's own peak (VmHWM) until stopped;
 * `peakMb` is the larger of the two maxima, in MiB.
 */
export class MemorySampler {
  #peakKb = 0;
  readonly #timer: NodeJS.Timeout;

  constructor(private readonly pid: number) {
    this.#timer = setInterval(() => this.sample(), 250);
    this.#timer.unref();
  }

  sample(): void {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
      for (const key of ['VmRSS', 'VmHWM']) {
        const kb = Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
        this.#peakKb = Math.max(this.#peakKb, kb);
      }
    } catch {
      // The process is gone; the peak read so far stands.
    }
  }

  stop(): number {
    this.sample();
    clearInterval(this.#timer);
    return this.peakMb;
  }

  get peakMb(): number {
    return Math.round((this.#peakKb / 1024) * 10) / 10;
  }
}

/** CPU seconds (user + system) a process has used so far; 0 when it is gone. */
export function cpuSeconds(pid: number, withReapedChildren = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14-17 of stat (utime, stime, cutime, cstime), counted from after the command name; in clock ticks.
    const ticks = Number(fields[11]) + Number(fields[12]) + (withReapedChildren ? Number(fields[13]) + Number(fields[14]) : 0);
    return ticks / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds used so far by a PostgreSQL cluster: its postmaster and every backend it forked. */
export function clusterCpuSeconds(postmasterPid: number): number {
  // The postmaster's own time plus that of the backends it has reaped (cutime, cstime)...
  let total = cpuSeconds(postmasterPid, true);
  // ...and of the backends still running.
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmasterPid) total += cpuSeconds(Number(entry));
    } catch {
      // Exited while we looked.
    }
  }
  return total;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits;
