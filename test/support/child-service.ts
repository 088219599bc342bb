/**
 * The real service as its own process: `src/main.ts` under tsx on the Node running the tests (Node
 * 24 under npm, as `npm start` runs it), for tests about the process itself: start-up, SIGTERM,
 * restarts on the same data, SIGKILL mid-work. Each run is in its own process group, so a SIGKILL
 * takes node and its embedded PostgreSQL down together (as a power cut or an OOM kill of the
 * container would), and takes the group down by itself should the test runner go away first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DIE_WITH_PARENT = pathToFileURL(path.join(REPO, 'test/support/die-with-parent.ts')).href;
const SERVICE_ARGS = ['--import', 'tsx', '--import', DIE_WITH_PARENT, 'src/main.ts'];

/** Only what the service needs: nothing of the test runner's environment leaks in. */
function serviceEnv(env: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    TZ: 'UTC',
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    ...env,
  };
}

export interface ChildRun {
  pid: number;
  url: string;
  /** Port of the embedded PostgreSQL, when the service started one. */
  databasePort: number | null;
  startedInMs: number;
}

/** One service, started, stopped, killed and started again with the same environment. */
export class ChildService {
  /** Every stdout/stderr line of every run, in order. */
  readonly lines: string[] = [];
  private child: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);
  /** The embedded PostgreSQL's cluster, once the service logged it: its server runs in a process group of its own. */
  private clusterDir: string | null = null;
  runs: ChildRun[] = [];

  constructor(private readonly env: Record<string, string>) {}

  get current(): ChildRun {
    const run = this.runs.at(-1);
    if (!run) throw new Error('the service was never started');
    return run;
  }

  /** Starts the service and resolves once it listens; rejects if it exits or takes over `timeoutMs`. */
  async start(timeoutMs = 60_000): Promise<ChildRun> {
    if (this.child) throw new Error('already running');
    const started = performance.now();
    const child = spawn(process.execPath, SERVICE_ARGS, { cwd: REPO, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: serviceEnv(this.env) });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    let databasePort: number | null = null;
    const listening = new Promise<string>((resolve, reject) => {
      const onLine = (line: string) => {
        this.lines.push(line);
        let entry: { msg?: string; url?: string; port?: number; clusterDir?: string } | null = null;
        try {
          entry = JSON.parse(line);
        } catch {
          return;
        }
        if (entry?.msg === 'embedded PostgreSQL started' && typeof entry.port === 'number') databasePort = entry.port;
        if (entry?.msg === 'embedded PostgreSQL started' && typeof entry.clusterDir === 'string') this.clusterDir = entry.clusterDir;
        if (entry?.msg === 'HTTP API listening' && entry.url) resolve(entry.url);
      };
      lineReader(child.stdout!, onLine);
      lineReader(child.stderr!, onLine);
      void this.exited.then((code) => reject(new Error(`the service exited (${code}) before listening:\n${this.lines.slice(-15).join('\n')}`)));
      setTimeout(() => reject(new Error(`the service did not listen within ${timeoutMs} ms:\n${this.lines.slice(-15).join('\n')}`)), timeoutMs).unref();
    });
    try {
      const url = await listening;
      const run = { pid: child.pid!, url, databasePort, startedInMs: Math.round(performance.now() - started) };
      this.runs.push(run);
      return run;
    } catch (error) {
      this.killGroup();
      await this.exited;
      this.child = null;
      throw error;
    }
  }

  /**
   * SIGKILL to node's process group and to its embedded PostgreSQL's (the service starts it in a group
   * of its own, out of reach of a terminal's Ctrl-C): both die at once, as in a power cut, and nothing
   * gets to clean up.
   */
  async kill(): Promise<void> {
    if (!this.child) return;
    this.killGroup();
    await this.exited;
    this.child = null;
  }

  /** SIGTERM (graceful shutdown); resolves with the exit code. */
  async stop(timeoutMs = 30_000): Promise<number | null> {
    if (!this.child) return null;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.killGroup(), timeoutMs);
    const code = await this.exited;
    clearTimeout(timer);
    this.child = null;
    return code;
  }

  private killGroup(): void {
    try {
      if (this.child?.pid) process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    const postmaster = this.clusterDir ? postmasterPid(this.clusterDir) : null;
    try {
      if (postmaster) process.kill(-postmaster, 'SIGKILL');
    } catch {
      // already gone, or a stale pid file
    }
  }
}

/** Runs the service expecting it to fail at start-up; resolves with its exit code and output. */
export async function runFailingStart(env: Record<string, string>): Promise<{ code: number | null; output: string[] }> {
  const child = spawn(process.execPath, SERVICE_ARGS, { cwd: REPO, env: serviceEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  lineReader(child.stdout!, (line) => output.push(line));
  lineReader(child.stderr!, (line) => output.push(line));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, output };
}

function lineReader(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    for (const part of parts) if (part.trim()) onLine(part);
  });
  stream.on('end', () => {
    if (rest.trim()) onLine(rest);
    rest = '';
  });
}

/** True while a process with this pid runs (a zombie waiting to be reaped does not count). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

/** The postmaster pid recorded in a cluster's postmaster.pid, or null when there is none. */
export function postmasterPid(clusterDir: string): number | null {
  try {
    const pid = Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
