import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The dependency rules of .dependency-cruiser.cjs (README "Architecture"): no import cycles (type-only
 * imports included), the core imports no feature, a feature never imports another feature's routes
 * or repository, nothing outside the composition root imports it, only repositories, entities and
 * src/db/ use MikroORM or Kysely, machines import nothing from src/. dependency-cruiser exits non-zero on any
 * violation and names each one.
 */
describe('dependency rules', () => {
  it('hold for src/, machines/ and contract/', async () => {
    const run = await promisify(execFile)(
      path.join(ROOT, 'node_modules/.bin/depcruise'),
      ['src', 'machines', 'contract', '--config', '.dependency-cruiser.cjs', '--output-type', 'err'],
      { cwd: ROOT, maxBuffer: 10 * 1024 * 1024 },
    ).catch((error: { stdout?: string; stderr?: string }) => ({ stdout: `${error.stdout ?? ''}${error.stderr ?? ''}`, failed: true }));
    expect('failed' in run, run.stdout).toBe(false);
    expect(run.stdout).toMatch(/no dependency violations found \(\d{3,} modules/);
  }, 120_000);
});
