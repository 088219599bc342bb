/**
 * A service run as its own process on its embedded PostgreSQL (DATA_DIR in a temp folder) against a
 * sandbox platform, for the tests that SIGKILL the whole process group and start it again on the
 * same DATA_DIR. Its output is watched for secrets, and the database password is one of them.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { deleteDataDir, freePort } from '../../../src/db/embedded.ts';
import { startSandbox, type Sandbox } from '../../sandbox/server.ts';
import { ChildService } from '../../support/child-service.ts';
import { ChaosClient } from './client.ts';
import { ledger } from './ledger.ts';

export interface CrashableService {
  sandbox: Sandbox;
  service: ChildService;
  dataDir: string;
  client: ChaosClient;
  /** The embedded PostgreSQL of the current run (its port changes with each start). */
  databaseUrl(): string;
  /** Kills the service, checks its output for secrets, closes the sandbox and deletes DATA_DIR. */
  close(): Promise<void>;
}

/** `name` names the temp folder and the ledger's source; `env` is added to (or overrides) the base. */
export async function startCrashableService(name: string, env: Record<string, string>): Promise<CrashableService> {
  const sandbox = await startSandbox();
  const dataDir = mkdtempSync(path.join(tmpdir(), `ors-chaos-${name}-`));
  const service = new ChildService({
    NODE_ENV: 'development',
    DATA_DIR: dataDir,
    // A fixed port, so a platform keeps delivering to the same address across restarts.
    PORT: String(await freePort()),
    HOST: '127.0.0.1',
    PLATFORM_BASE_URL: sandbox.baseUrlTemplate,
    SYNC_RETRY_BASE_DELAY_MS: '200',
    LOG_LEVEL: 'info',
    ...env,
  });
  ledger.watch(`${name} service process (stdout and stderr)`, () => service.lines);
  let client: ChaosClient;
  try {
    client = new ChaosClient((await service.start()).url);
  } catch (error) {
    await service.kill().catch(() => undefined);
    await sandbox.close();
    deleteDataDir(dataDir);
    throw error;
  }
  const password = readFileSync(path.join(dataDir, 'secrets', 'postgres-password'), 'utf8').trim();
  ledger.secret('database password', password);
  return {
    sandbox,
    service,
    dataDir,
    client,
    databaseUrl: () => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${service.current.databasePort}/postgres`,
    close: async () => {
      await service.kill();
      ledger.flush();
      await sandbox.close();
      deleteDataDir(dataDir);
    },
  };
}
