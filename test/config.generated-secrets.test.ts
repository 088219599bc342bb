/**
 * The secrets a development start generates into DATA_DIR/secrets (README, Configuration: JWT_SECRET
 * and ENCRYPTION_KEY "generated into DATA_DIR in development"). A secret file that is there but holds
 * no usable secret (left empty by a start that could not write it, a disk that was full, a
 * `touch`, a copy cut short) was read as it was: an empty JWT secret let the service start and
 * answer 500 to every register and login for good (jose refuses a zero-length key), and a short
 * encryption key died after the database had started, with a stack trace. It must stop the start with
 * one line naming the variable and the file, as a bad value does.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.ts';
import { createTestDatabase } from './support/database.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function dataDirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ors-secrets-'));
  dirs.push(dir);
  mkdirSync(path.join(dir, 'secrets'), { mode: 0o700 });
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, 'secrets', name), text, { mode: 0o600 });
  return dir;
}

/** Runs `npm start`'s entry point; resolves with how it ended: its exit code and output, or 'started' (then it is stopped). */
function start(env: Record<string, string>): Promise<{ outcome: number | null | 'started'; output: string[] }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', TZ: 'UTC', NODE_ENV: 'development', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
  });
  const output: string[] = [];
  let started = false;
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        output.push(line);
        if (line.startsWith('ready: API')) {
          started = true;
          child.kill('SIGTERM');
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => resolve({ outcome: started ? 'started' : code, output }));
  });
}

describe('generated secrets in DATA_DIR', () => {
  it('an empty or short one stops the start with one line naming the variable and its file', async () => {
    const databaseUrl = await createTestDatabase();
    const good = { 'jwt-secret': 'a'.repeat(64), 'encryption-key': Buffer.alloc(32, 7).toString('base64') };
    for (const [file, text, variable] of [
      ['jwt-secret', '', 'JWT_SECRET'],
      ['jwt-secret', '\n', 'JWT_SECRET'],
      ['encryption-key', '', 'ENCRYPTION_KEY'],
      ['encryption-key', 'c2hvcnQ=', 'ENCRYPTION_KEY'],
    ] as const) {
      const dir = dataDirWith({ ...good, [file]: text });
      const { outcome, output } = await start({ DATA_DIR: dir, DATABASE_URL: databaseUrl });
      const label = `${file} = ${JSON.stringify(text)}`;
      expect({ outcome, lines: output.length }, `${label}\n${output.join('\n')}`).toEqual({ outcome: 1, lines: 1 });
      expect(output[0], label).toMatch(new RegExp(`^invalid configuration: ${variable} .*${path.join(dir, 'secrets', file).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      // Nothing was overwritten: a key that sealed store credentials is never replaced behind the operator's back.
      expect(readFileSync(path.join(dir, 'secrets', file), 'utf8'), label).toBe(text);
    }
  }, 120_000);

  it('a start on a fresh DATA_DIR still generates both, and the next start reads the same', () => {
    const dir = dataDirWith({});
    const first = loadConfig({ NODE_ENV: 'development', DATA_DIR: dir });
    const second = loadConfig({ NODE_ENV: 'development', DATA_DIR: dir });
    expect(first.jwtSecret.length).toBeGreaterThanOrEqual(32);
    expect(first.encryptionKey).toHaveLength(32);
    expect(second.jwtSecret).toBe(first.jwtSecret);
    expect(second.encryptionKey.equals(first.encryptionKey)).toBe(true);
  });
});
