/**
 * A SIGTERM (or Ctrl-C) while the service is still starting: README, Operations: "SIGTERM stops
 * accepting requests, lets requests and jobs in flight finish, stops the queue and the embedded
 * database". A stop asked for before the service finished starting must still stop what it has
 * started, the embedded PostgreSQL last, and exit; it must not leave that PostgreSQL running with
 * nobody to stop it (an orphan holding memory and the cluster until some later start on the same
 * DATA_DIR, if there ever is one).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { deleteDataDir } from '../src/db/embedded.ts';
import { isAlive, postmasterPid } from './support/child-service.ts';
import { waitFor } from './support/wait.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = mkdtempSync(path.join(tmpdir(), 'ors-sigterm-start-'));
const leftRunning: number[] = [];
afterAll(() => {
  for (const pid of leftRunning) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  deleteDataDir(dataDir);
});

describe('a stop asked for while the service starts', () => {
  it('SIGTERM during the migrations stops the embedded PostgreSQL it started and exits 0', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: REPO,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', TZ: 'UTC', NODE_ENV: 'test', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', DATA_DIR: dataDir },
    });
    const lines: string[] = [];
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let clusterDir: string | null = null;
    const databaseStarted = new Promise<void>((resolve, reject) => {
      let rest = '';
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        const parts = (rest + chunk).split('\n');
        rest = parts.pop() ?? '';
        for (const line of parts) {
          lines.push(line);
          // The embedded PostgreSQL is up; migrations and the queue schema come next.
          if (line.includes('"embedded PostgreSQL started"')) {
            clusterDir = (JSON.parse(line) as { clusterDir: string }).clusterDir;
            resolve();
          }
        }
      });
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => lines.push(chunk));
      void exited.then(() => reject(new Error(`exited before its database started:\n${lines.join('\n')}`)));
    });
    await databaseStarted;
    const postmaster = postmasterPid(clusterDir!);
    expect(postmaster).not.toBeNull();
    leftRunning.push(postmaster!);
    child.kill('SIGTERM');

    const code = await exited;
    // The PostgreSQL it started is stopped with it, not left running.
    await waitFor(async () => !isAlive(postmaster!), 15_000).catch(() => {});
    expect({ code, postgresRunning: isAlive(postmaster!) }, lines.slice(-10).join('\n')).toEqual({ code: 0, postgresRunning: false });
    expect(lines.some((line) => line.includes('"service started"'))).toBe(false);
  }, 90_000);
});
