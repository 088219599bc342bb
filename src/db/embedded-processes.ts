/**
 * Which process a cluster belongs to. A `kill -9` of the service's node process alone leaves its
 * PostgreSQL running (orphaned: re-parented to init), still holding the cluster; the next start
 * must tell that server from one a live service is using, stop the first and refuse the second.
 *
 * `postgres.owner`, next to the cluster, records the node process that runs it: its pid and its
 * start time, so that a pid reused by another process is not taken for it. A running server is a
 * live service's when that owner is alive, or when the server's parent (the node process that
 * spawned it) is still a live node process; otherwise it is an orphan, and gets a fast shutdown
 * (sessions ended, a checkpoint written: nothing is lost) before the cluster starts again.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { EmbeddedDatabaseError } from './embedded-location.ts';

const ORPHAN_STOP_TIMEOUT_MS = 60_000;

interface Owner {
  pid: number;
  /** Clock ticks since boot (Linux); null where there is no /proc. */
  startTime: string | null;
}

/**
 * Makes this process the owner of the cluster in `clusterDir` (after stopping a server a killed
 * service left on it), or refuses because a live service uses it. Returns the release.
 */
export async function claimCluster(clusterDir: string, dataDir: string, log: (line: string) => void): Promise<() => void> {
  const ownerFile = path.join(path.dirname(clusterDir), 'postgres.owner');
  const owner = readOwner(ownerFile);
  if (owner && owner.pid !== process.pid && isAlive(owner)) throw inUse(dataDir, owner.pid);

  const server = runningServer(clusterDir);
  if (server !== null) {
    const parent = parentOf(server);
    if (parent === process.pid || (parent !== null && parent > 1 && isNodeProcess(parent))) throw inUse(dataDir, parent);
    await stopOrphan(server, clusterDir, log);
  }

  const claim: Owner = { pid: process.pid, startTime: startTimeOf(process.pid) };
  writeFileSync(ownerFile, JSON.stringify(claim));
  return () => {
    if (readOwner(ownerFile)?.pid === process.pid) rmSync(ownerFile, { force: true });
  };
}

function inUse(dataDir: string, pid: number): EmbeddedDatabaseError {
  return new EmbeddedDatabaseError(
    `DATA_DIR ${dataDir} is in use by another running service (pid ${pid}): stop it, or give this service its own DATA_DIR (or a DATABASE_URL)`,
  );
}

async function stopOrphan(pid: number, clusterDir: string, log: (line: string) => void): Promise<void> {
  log(`stopping the PostgreSQL server (pid ${pid}) of ${clusterDir}: the service that started it is gone`);
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + ORPHAN_STOP_TIMEOUT_MS;
  while (isRunning(pid)) {
    if (Date.now() > deadline) {
      throw new EmbeddedDatabaseError(
        `the PostgreSQL server (pid ${pid}) of ${clusterDir}, left running by a service that is gone, did not stop within ${ORPHAN_STOP_TIMEOUT_MS / 1000} s: stop it (kill ${pid}) and start again`,
      );
    }
    await delay(100);
  }
}

/** Whether a live service owns the cluster in `clusterDir`, or a server still runs on it. */
export function clusterInUse(clusterDir: string): boolean {
  const owner = readOwner(path.join(path.dirname(clusterDir), 'postgres.owner'));
  return (owner !== null && isAlive(owner)) || runningServer(clusterDir) !== null;
}

function readOwner(file: string): Owner | null {
  try {
    const owner = JSON.parse(readFileSync(file, 'utf8')) as Owner;
    return Number.isInteger(owner.pid) && owner.pid > 0 ? owner : null;
  } catch {
    return null;
  }
}

function isAlive(owner: Owner): boolean {
  if (!isRunning(owner.pid)) return false;
  const startTime = startTimeOf(owner.pid);
  return owner.startTime === null || startTime === null || startTime === owner.startTime;
}

/** The postmaster named by the cluster's postmaster.pid, when it runs; null otherwise. */
function runningServer(clusterDir: string): number | null {
  const pid = recordedPostmaster(clusterDir);
  return pid !== null && belongsToCluster(pid, clusterDir) ? pid : null;
}

function recordedPostmaster(clusterDir: string): number | null {
  try {
    const pid = Number(readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
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
export function removeStalePidFile(clusterDir: string): void {
  const pid = recordedPostmaster(clusterDir);
  if (pid === null || belongsToCluster(pid, clusterDir)) return;
  rmSync(path.join(clusterDir, 'postmaster.pid'), { force: true });
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

/** Node names its main thread, so `comm` says MainThread; the executable says node. */
function isNodeProcess(pid: number): boolean {
  try {
    return path.basename(readlinkSync(`/proc/${pid}/exe`)).startsWith('node');
  } catch {
    const command = ps(pid, 'comm');
    return command !== null && path.basename(command).startsWith('node');
  }
}

function parentOf(pid: number): number | null {
  const fields = procStat(pid);
  const parent = Number(fields ? fields[1] : ps(pid, 'ppid'));
  return Number.isInteger(parent) && parent > 0 ? parent : null;
}

function startTimeOf(pid: number): string | null {
  return procStat(pid)?.[19] ?? null;
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces): state first. */
function procStat(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** Where there is no /proc (macOS). */
function ps(pid: number, field: 'comm' | 'ppid'): string | null {
  try {
    return execFileSync('ps', ['-o', `${field}=`, '-p', String(pid)], { encoding: 'utf8', stdio: 'pipe' }).trim() || null;
  } catch {
    return null;
  }
}
