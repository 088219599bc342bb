/**
 * HOST is in README's Configuration table, and "a bad value stops the service with one line naming
 * the variable". A HOST that is not an address of this machine (a typo, `host:port`, another
 * machine's address) was reported as a PORT problem ("set PORT to a free port"), and with PORT=0 it
 * started a whole PostgreSQL and then died with a JSON stack trace.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deleteDataDir } from '../src/db/embedded.ts';
import { runFailingStart } from './support/child-service.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'ors-host-'));
afterAll(() => deleteDataDir(dataDir));

describe('HOST', () => {
  it('that is not an address of this machine stops the start with one line naming HOST, before any database starts', async () => {
    for (const [host, port] of [
      ['localhost:3000', '3999'],
      ['10.255.255.1', '3999'],
      ['10.255.255.1', '0'],
      ['no-such-host.invalid', '0'],
    ] as const) {
      const { code, output } = await runFailingStart({ HOST: host, PORT: port, DATA_DIR: dataDir });
      const label = `HOST=${host} PORT=${port}`;
      expect(code, label).toBe(1);
      expect(output, label).toEqual([expect.stringMatching(new RegExp(`^invalid configuration: HOST ${host.replace(/\./g, '\\.')} is not an address of this machine`))]);
    }
  }, 120_000);
});
