import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Folder where every chaos file records the secrets it created, the responses it got and the logs it saw. */
    chaosLedgerDir: string;
  }
}

/**
 * The ledger is what makes the secrets check a whole-suite check: every file appends to it, and the
 * last file (`zz-secrets.test.ts`, ordered last by the sequencer) matches every response and log line
 * of the run against every secret of the run.
 */
export default function setup(project: TestProject) {
  const dir = mkdtempSync(path.join(tmpdir(), 'ors-chaos-ledger-'));
  project.provide('chaosLedgerDir', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
