import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config/index.ts';
import { startService, type RunningService } from '../../src/server.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createTestDatabase } from './database.ts';
import { ApiClient } from './api.ts';
import { recordSecret, registerLogs } from './leaks.ts';

export interface TestProcess extends RunningService {
  databaseUrl: string;
  /** Every log line the service wrote, for assertions (e.g. that no secret was logged). */
  logs: string[];
}

export interface TestService extends TestProcess {
  url: string;
  api: ApiClient;
}

/** Starts the real service in-process on a fresh database and a free loopback port. */
export async function startTestService(env: Record<string, string> = {}): Promise<TestService> {
  const service = await startTestProcess(env);
  if (!service.url) throw new Error('the test service must run the API');
  return { ...service, url: service.url, api: new ApiClient(service.url) };
}

/**
 * Starts the real service in-process with any ROLE, e.g. `{ROLE: 'worker', DATABASE_URL}` for one
 * more worker process on a shared database. Processes sharing a database need the same
 * ENCRYPTION_KEY (stored store tokens) and JWT_SECRET, so pass both explicitly then.
 */
export async function startTestProcess(env: Record<string, string> = {}): Promise<TestProcess> {
  const databaseUrl = env.DATABASE_URL ?? (await createTestDatabase());
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'ors-svc-')),
    JWT_SECRET: randomBytes(32).toString('hex'),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'info',
    SYNC_RETRY_BASE_DELAY_MS: '100',
    // The divergence watch reads every store's changes; files that test it turn it on (or ask for passes).
    DIVERGENCE_INTERVAL_MS: '0',
    AUTH_RATE_LIMIT_PER_MINUTE: '10000',
    WEBHOOK_SIGNATURE_FAILURES_PER_MINUTE: '10000',
    ...env,
  });
  recordSecret('JWT_SECRET', config.jwtSecret);
  recordSecret('ENCRYPTION_KEY', config.encryptionKey.toString('base64'));
  const logs: string[] = [];
  registerLogs(`${config.role} service`, logs);
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const service = await startService(config, createLogger(config.logLevel, sink));
  return { ...service, databaseUrl, logs };
}
