/**
 * Issue 26: starting and stopping as a person at a terminal sees it. One line names the URLs; Ctrl-C
 * (SIGINT to the whole foreground process group, as a terminal sends it) stops everything without an
 * error line, the embedded PostgreSQL last; a busy port, an unreachable DATABASE_URL and an old Node
 * each stop the start with one line naming what to change.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { deleteDataDir, startEmbeddedPostgres } from '../src/db/embedded.ts';
import { abandonedClusters, pruneClusters } from '../src/db/embedded-prune.ts';
import { isAlive, postmasterPid, runFailingStart } from './support/child-service.ts';
import { registerLogs } from './support/leaks.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dataDirs: string[] = [];
afterAll(() => dataDirs.forEach((dir) => deleteDataDir(dir)));

function dataDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ors-start-up-'));
  dataDirs.push(dir);
  return dir;
}

it('prints one human line naming the API, /docs and /console; GET / leads to the console; Ctrl-C stops cleanly, PostgreSQL last', async () => {
  // In a process group of its own, as a shell runs a foreground job.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', DATA_DIR: dataDir() },
  });
  const lines: string[] = [];
  registerLogs('start-up', lines);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<string>((resolve, reject) => {
    const onLine = (line: string) => {
      lines.push(line);
      if (line.startsWith('ready: ')) resolve(line);
    };
    createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', onLine);
    void exited.then((code) => reject(new Error(`exited (${code}) before it was ready:\n${lines.join('\n')}`)));
  });
  try {
    const readyLine = await ready;
    const base = /API (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(readyLine)?.[1];
    expect(base, readyLine).toBeDefined();
    expect(readyLine).toContain(`docs ${base}/docs`);
    expect(readyLine).toContain(`console ${base}/console`);

    const root = await fetch(`${base}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/console');

    const started = JSON.parse(lines.find((line) => line.includes('"embedded PostgreSQL started"'))!) as { clusterDir: string };
    const postmaster = postmasterPid(started.clusterDir);
    expect(postmaster).not.toBeNull();

    process.kill(-child.pid!, 'SIGINT');
    expect(await exited).toBe(0);
    expect(isAlive(postmaster!), 'PostgreSQL was stopped').toBe(false);
    const stopping = lines.findIndex((line) => line.includes('"shutting down"'));
    expect(stopping).toBeGreaterThan(-1);
    // Nothing after the signal but JSON lines below warning: no error, no stack, no PostgreSQL complaint.
    const after = lines.slice(stopping + 1);
    for (const line of after) expect((JSON.parse(line) as { level: number }).level, line).toBeLessThan(40);
  } finally {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already stopped
    }
  }
}, 60_000);

it('stops before starting a database, with one line naming PORT, when the port is in use', async () => {
  const busy: Server = await new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => resolve(server));
  });
  const { port } = busy.address() as { port: number };
  try {
    const { code, output } = await runFailingStart({ PORT: String(port), DATA_DIR: dataDir() });
    expect(code).toBe(1);
    expect(output).toEqual([`port ${port} on 127.0.0.1 is in use: stop what uses it, or set PORT to a free port (PORT=0 picks one)`]);
  } finally {
    busy.close();
  }
});

it('stops with one line naming DATABASE_URL, and never its password, when the database cannot be reached', async () => {
  const closed: Server = await new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => resolve(server));
  });
  const { port } = closed.address() as { port: number };
  await new Promise((resolve) => closed.close(resolve));
  const { code, output } = await runFailingStart({ DATABASE_URL: `postgres://app:s3cret-pw@127.0.0.1:${port}/orders` });
  expect(code).toBe(1);
  expect(output).toHaveLength(1);
  expect(output[0]).toMatch(new RegExp(`^cannot use the database at DATABASE_URL \\(127\\.0\\.0\\.1:${port}/orders\\): .*ECONNREFUSED.*check DATABASE_URL`));
  expect(output[0]).not.toContain('s3cret-pw');
});

/** The machine's own Node, when it is older than 24 (the tests themselves run on the pinned Node 24). */
const olderNode = ['/usr/bin/node', '/usr/local/bin/node'].find((file) => {
  if (!existsSync(file)) return false;
  return Number(execFileSync(file, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).trim()) < 24;
});

it.runIf(olderNode)('says which Node to use when started on an older one', async () => {
  const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = spawn(olderNode!, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', PORT: '0', DATA_DIR: dataDir() } });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('close', (code) => resolve({ code, output }));
  });
  expect(result.code).toBe(1);
  expect(result.output.trim().split('\n')).toEqual([expect.stringMatching(/^this service needs Node 24, and this is Node \d+\.\d+\.\d+: start it with `npm start`/)]);
});

it.runIf(process.getuid?.() === 0)('clusters:prune removes the clusters of removed DATA_DIRs kept in the shared place, and none in use', async () => {
  const place = path.join('/var/tmp', `ors-prune-test-${process.pid}`);
  const removed = mkdtempSync(path.join(tmpdir(), 'ors-prune-'));
  const kept = dataDir();
  try {
    const first = await startEmbeddedPostgres({ dataDir: removed, sharedPlaces: [place] });
    await first.stop();
    const running = await startEmbeddedPostgres({ dataDir: kept, sharedPlaces: [place] });
    try {
      // Both clusters are outside their private (mode 700) DATA_DIRs, in the shared place.
      expect(first.clusterDir.startsWith(place)).toBe(true);
      expect(abandonedClusters([place])).toEqual([]);

      rmSync(removed, { recursive: true, force: true });
      const abandoned = abandonedClusters([place]);
      expect(abandoned).toEqual([{ home: path.dirname(first.clusterDir), dataDir: realpathSync(tmpdir()) + removed.slice(tmpdir().length) }]);
      pruneClusters(abandoned);
      expect(existsSync(path.dirname(first.clusterDir))).toBe(false);
      expect(existsSync(running.clusterDir), 'the running cluster stays').toBe(true);
    } finally {
      await running.stop();
    }
  } finally {
    deleteDataDir(kept, [place]);
    rmSync(place, { recursive: true, force: true });
  }
}, 60_000);
