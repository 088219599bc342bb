import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * `mkdirSync(dir, { recursive: true })`, one level at a time. Node's recursive mkdir loops forever
 * under a folder that answers ENOENT to a mkdir in it (/proc, /sys), so a DATA_DIR there would hang
 * the start instead of failing with the error of the level that cannot be made.
 */
export function makeDirectories(dir: string, mode?: number): void {
  const missing: string[] = [];
  for (let current = path.resolve(dir); !existsSync(current); current = path.dirname(current)) {
    missing.unshift(current);
    if (path.dirname(current) === current) break;
  }
  for (const level of missing) {
    try {
      mkdirSync(level, mode === undefined ? undefined : { mode });
    } catch (error) {
      // Another process made it meanwhile.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  // As mkdir would say of a file in the way.
  if (!statSync(dir).isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${dir}'`), { code: 'ENOTDIR' });
}
