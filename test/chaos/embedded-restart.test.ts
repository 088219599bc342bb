/**
 * Issue 6, item 1 (the embedded database's part): after a SIGKILL, the embedded PostgreSQL starts
 * again on the same data folder with its data, whatever the stale postmaster.pid it left names;
 * and a cluster that still runs is never started twice. (crash.test.ts kills the whole service;
 * this kills the database alone, and makes the pid in the stale file belong to someone else.)
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { deleteDataDir, freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import { queryRows } from '../support/database.ts';
import { waitFor } from '../support/wait.ts';
import { postmasterPid } from '../support/child-service.ts';
import { itLeaksNoSecret, ledger } from './support/ledger.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'ors-chaos-embedded-'));
const clusterDir = path.join(dataDir, 'postgres');
const pidFile = path.join(clusterDir, 'postmaster.pid');
let running: EmbeddedDatabase | null = null;
const logs: string[] = [];
ledger.watch('embedded PostgreSQL', () => logs);

afterAll(async () => {
  await running?.stop();
  ledger.flush();
  deleteDataDir(dataDir);
});

/** Every live process of the cluster: the postmaster and its backends all work in the cluster folder. */
function clusterProcesses(): number[] {
  const dir = realpathSync(clusterDir);
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return realpathSync(`/proc/${pid}/cwd`) === dir && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function start(port: number): Promise<EmbeddedDatabase> {
  return startEmbeddedPostgres({ dataDir, port, onLog: (line) => logs.push(line) });
}

/** SIGKILL to the postmaster; its backends notice and die too, leaving postmaster.pid behind. */
async function killCluster(): Promise<number> {
  const pid = postmasterPid(clusterDir)!;
  expect(pid).toBeGreaterThan(0);
  process.kill(pid, 'SIGKILL');
  running = null;
  await waitFor(async () => clusterProcesses().length === 0, 20_000, 'every process of the cluster to exit');
  expect(existsSync(pidFile), 'the killed server left its postmaster.pid').toBe(true);
  return pid;
}

describe('the embedded PostgreSQL after a SIGKILL', () => {
  const port = freePort();

  it('starts again on the same folder, data intact', async () => {
    running = await start(await port);
    ledger.secret('database password', new URL(running.url()).password);
    await queryRows(running.url(), 'create table survivors (v text)');
    await queryRows(running.url(), `insert into survivors values ('before the kill')`);
    await killCluster();

    running = await start(await port);
    expect(await queryRows(running.url(), 'select v from survivors')).toEqual([{ v: 'before the kill' }]);
  });

  it("starts even when the stale postmaster.pid names another cluster's live postgres process", async () => {
    // A live postgres process that is not ours: a backend of the suite's shared cluster.
    const stranger = new pg.Client({ connectionString: inject('pgAdminUrl') });
    await stranger.connect();
    try {
      const [{ pid: strangerPid }] = (await stranger.query<{ pid: number }>('select pg_backend_pid() as pid')).rows as [{ pid: number }];
      await queryRows(running!.url(), `insert into survivors values ('before the second kill')`);
      await killCluster();
      const lines = readFileSync(pidFile, 'utf8').split('\n');
      lines[0] = String(strangerPid);
      writeFileSync(pidFile, lines.join('\n'));

      running = await start(await port);
      expect(await queryRows(running.url(), 'select v from survivors order by v')).toEqual([{ v: 'before the kill' }, { v: 'before the second kill' }]);
      // The stranger was left alone.
      expect((await stranger.query('select 1 as ok')).rows).toEqual([{ ok: 1 }]);
    } finally {
      await stranger.end();
    }
  });

  it('never starts a second server on a folder whose server still runs', async () => {
    const before = readFileSync(pidFile, 'utf8');
    await expect(start(await freePort())).rejects.toThrow(/is in use by another running service/);
    expect(readFileSync(pidFile, 'utf8')).toBe(before);
    expect(await queryRows(running!.url(), 'select count(*)::int as n from survivors')).toEqual([{ n: 2 }]);
  });
});

itLeaksNoSecret();
