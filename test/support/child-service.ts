import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

const ROOT = new URL('../../', import.meta.url).pathname;
const TSX_CLI = `${ROOT}node_modules/tsx/dist/cli.mjs`;

export interface ChildService {
  process: ChildProcess;
  url: string;
  /** Every stdout/stderr line so far. */
  output: string[];
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
}

/**
 * Runs `src/main.ts` as its own process (Node 24 via process.execPath, as `npm start` does) and
 * resolves once it logs the URL it listens on.
 */
export function startChildService(env: Record<string, string>, options: { detached?: boolean } = {}): Promise<ChildService> {
  const child = spawn(process.execPath, [TSX_CLI, 'src/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const onLine = (line: string) => {
      output.push(line);
      if (!line.includes('"HTTP API listening"')) return;
      resolve({ process: child, url: (JSON.parse(line) as { url: string }).url, output, exited });
    };
    createInterface({ input: child.stdout! }).on('line', onLine);
    createInterface({ input: child.stderr! }).on('line', (line) => output.push(line));
    exited.then((code) => reject(new Error(`service exited (${code}) before listening:\n${output.join('\n')}`)));
  });
}

/** Runs `src/main.ts` expecting it to fail at start-up; resolves with its exit code and output. */
export async function runFailingStart(env: Record<string, string>): Promise<{ code: number | null; output: string[] }> {
  const child = spawn(process.execPath, [TSX_CLI, 'src/main.ts'], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => output.push(line));
  createInterface({ input: child.stderr! }).on('line', (line) => output.push(line));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output };
}
