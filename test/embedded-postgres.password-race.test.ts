/**
 * The embedded PostgreSQL's superuser password is generated on a DATA_DIR's first start and kept in
 * DATA_DIR/secrets/postgres-password. It was written without a check (exists? no: write mine), so two
 * processes starting together on a fresh DATA_DIR (ROLE=api and ROLE=worker, as the README runs them)
 * could each write their own: the file ended with one, the other process had initialised (or would
 * connect to) the cluster with the other, and that process, or every later start, could no longer log
 * in to its own database. The first write is now create-exclusive (written aside, linked into place)
 * and every process uses what is in the file afterwards.
 *
 * Real processes, released at one instant on fresh folders, round after round.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PROCESSES = 4;
const ROUNDS = 100;
const ROUND_MS = 40;

const root = mkdtempSync(path.join(tmpdir(), 'ors-password-race-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Each process waits for each round's instant, then asks for the password of that round's DATA_DIR; prints one line per round. */
const SCRIPT = `
const { clusterPassword } = await import(${JSON.stringify(pathToFileURL(path.join(REPO, 'src/db/embedded.ts')).href)});
const [root, start, rounds, roundMs] = process.argv.slice(2);
const out = [];
for (let round = 0; round < Number(rounds); round++) {
  const at = Number(start) + round * Number(roundMs);
  while (Date.now() < at) {}
  out.push(clusterPassword(root + '/round-' + round));
}
process.stdout.write(JSON.stringify(out));
`;

function runProcess(script: string, start: number): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, root, String(start), String(ROUNDS), String(ROUND_MS)], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(stdout) as string[]) : reject(new Error(`exit ${code}: ${stderr}`)))),
  );
}

it('processes starting together on a fresh DATA_DIR all use the one password the file keeps', async () => {
  const script = path.join(root, 'ask.mjs');
  writeFileSync(script, SCRIPT);
  // Late enough for every process to have loaded the module.
  const start = Date.now() + 6_000;
  const answers = await Promise.all(Array.from({ length: PROCESSES }, () => runProcess(script, start)));

  const disagreements: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const kept = readFileSync(path.join(root, `round-${round}`, 'secrets', 'postgres-password'), 'utf8').trim();
    expect(kept).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const used = answers.map((perProcess) => perProcess[round]);
    if (used.some((password) => password !== kept)) disagreements.push(`round ${round}: ${used.filter((password) => password !== kept).length} of ${PROCESSES} used another password than the file's`);
  }
  expect(disagreements).toEqual([]);
}, 60_000);
