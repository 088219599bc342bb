import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.ts';

const dirs: string[] = [];
const dataDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ors-config-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const JWT_SECRET = randomBytes(32).toString('hex');
const ENCRYPTION_KEY = randomBytes(32).toString('base64');
/** A complete, valid environment; each case changes one thing. */
const valid = (overrides: Record<string, string | undefined> = {}) => ({
  NODE_ENV: 'test',
  DATA_DIR: dataDir(),
  JWT_SECRET,
  ENCRYPTION_KEY,
  ...overrides,
});

function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('accepts a valid environment and applies the defaults', () => {
    const config = loadConfig(valid());
    expect(config).toMatchObject({
      port: 3000,
      role: 'all',
      runsApi: true,
      runsWorker: true,
      databaseUrl: null,
      platformBaseUrl: null,
      syncRetryBaseDelayMs: 30_000,
      reconcileIntervalMs: 300_000,
      reconcileGraceMs: 120_000,
      queueIdlePollMs: 50,
      logLevel: 'info',
      jwtSecret: JWT_SECRET,
      trustedProxyHops: 0,
    });
    expect(config.encryptionKey.equals(Buffer.from(ENCRYPTION_KEY, 'base64'))).toBe(true);
  });

  it('TRUST_PROXY: true is the one load balancer in front, a number that many proxies', () => {
    expect(loadConfig(valid({ TRUST_PROXY: 'true' })).trustedProxyHops).toBe(1);
    expect(loadConfig(valid({ TRUST_PROXY: '3' })).trustedProxyHops).toBe(3);
    expect(loadConfig(valid({ TRUST_PROXY: 'false' })).trustedProxyHops).toBe(0);
  });

  it('reads the values it is given', () => {
    const config = loadConfig(
      valid({
        PORT: '0',
        ROLE: 'worker',
        DATABASE_URL: 'postgresql://u:p@db.internal:5432/app',
        PLATFORM_BASE_URL: 'http://127.0.0.1:4010/{shopDomain}',
        SYNC_RETRY_BASE_DELAY_MS: '250',
        RECONCILE_INTERVAL_MS: '0',
        RECONCILE_GRACE_MS: '5000',
        QUEUE_IDLE_POLL_MS: '200',
        LOG_LEVEL: 'debug',
      }),
    );
    expect(config).toMatchObject({
      port: 0,
      role: 'worker',
      runsApi: false,
      runsWorker: true,
      databaseUrl: 'postgresql://u:p@db.internal:5432/app',
      platformBaseUrl: 'http://127.0.0.1:4010/{shopDomain}',
      syncRetryBaseDelayMs: 250,
      reconcileIntervalMs: 0,
      reconcileGraceMs: 5000,
      queueIdlePollMs: 200,
      logLevel: 'debug',
    });
  });

  it.each([
    ['PORT', { PORT: 'abc' }],
    ['PORT', { PORT: '' }],
    ['PORT', { PORT: '1e3' }],
    ['PORT', { PORT: '80.5' }],
    ['PORT', { PORT: '70000' }],
    ['PORT', { PORT: '-1' }],
    ['ROLE', { ROLE: 'boss' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://x' }],
    ['PLATFORM_BASE_URL', { PLATFORM_BASE_URL: 'http://127.0.0.1:4010/' }],
    ['PLATFORM_BASE_URL', { PLATFORM_BASE_URL: 'ftp://127.0.0.1/{shopDomain}' }],
    ['SYNC_RETRY_BASE_DELAY_MS', { SYNC_RETRY_BASE_DELAY_MS: 'soon' }],
    ['SYNC_RETRY_BASE_DELAY_MS', { SYNC_RETRY_BASE_DELAY_MS: ' ' }],
    ['RECONCILE_INTERVAL_MS', { RECONCILE_INTERVAL_MS: '-1' }],
    ['RECONCILE_GRACE_MS', { RECONCILE_GRACE_MS: '2m' }],
    ['QUEUE_IDLE_POLL_MS', { QUEUE_IDLE_POLL_MS: '0' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['TRUST_PROXY', { TRUST_PROXY: 'yes' }],
    ['EVENT_RETENTION_DAYS', { EVENT_RETENTION_DAYS: '7' }],
    ['TRUST_PROXY', { TRUST_PROXY: '0' }],
    ['NODE_ENV', { NODE_ENV: 'staging' }],
    ['JWT_SECRET', { JWT_SECRET: 'short' }],
    ['ENCRYPTION_KEY', { ENCRYPTION_KEY: 'not-base64-32-bytes' }],
    ['ENCRYPTION_KEY', { ENCRYPTION_KEY: randomBytes(16).toString('base64') }],
  ])('rejects a bad %s with one line naming it', (variable, overrides) => {
    const error = configError(valid(overrides));
    expect(error.message).toContain(variable);
    expect(error.message).not.toContain('\n');
    expect(error.message.length).toBeLessThan(200);
  });

  it.each([
    ['JWT_SECRET', { JWT_SECRET: undefined, ENCRYPTION_KEY: undefined }],
    ['JWT_SECRET', { JWT_SECRET: undefined }],
    ['ENCRYPTION_KEY', { ENCRYPTION_KEY: undefined }],
  ])('requires %s when NODE_ENV=production, and writes no secret', (variable, overrides) => {
    const env = valid({ NODE_ENV: 'production', ...overrides });
    const error = configError(env);
    expect(error.message).toContain(variable);
    expect(error.message).toContain('production');
    expect(error.message).not.toContain('\n');
    expect(readdirSync(env.DATA_DIR!)).toEqual([]);
  });

  it('runs in production when given both secrets, without touching DATA_DIR', () => {
    const env = valid({ NODE_ENV: 'production' });
    const config = loadConfig(env);
    expect(config.production).toBe(true);
    expect(config.jwtSecret).toBe(JWT_SECRET);
    expect(readdirSync(env.DATA_DIR!)).toEqual([]);
  });

  it('generates local secrets into DATA_DIR in development and reuses them', () => {
    const dir = dataDir();
    const env = { NODE_ENV: 'development', DATA_DIR: dir };
    const first = loadConfig(env);
    expect(first.jwtSecret.length).toBeGreaterThanOrEqual(32);
    expect(first.encryptionKey).toHaveLength(32);

    const secretsDir = path.join(dir, 'secrets');
    expect(readdirSync(secretsDir).sort()).toEqual(['encryption-key', 'jwt-secret']);
    for (const file of ['encryption-key', 'jwt-secret']) {
      // Readable by the owner only.
      expect(statSync(path.join(secretsDir, file)).mode & 0o077).toBe(0);
    }
    expect(readFileSync(path.join(secretsDir, 'jwt-secret'), 'utf8').trim()).toBe(first.jwtSecret);

    const second = loadConfig(env);
    expect(second.jwtSecret).toBe(first.jwtSecret);
    expect(second.encryptionKey.equals(first.encryptionKey)).toBe(true);

    // Another DATA_DIR gets its own secrets.
    const other = loadConfig({ NODE_ENV: 'development', DATA_DIR: dataDir() });
    expect(other.jwtSecret).not.toBe(first.jwtSecret);
    expect(other.encryptionKey.equals(first.encryptionKey)).toBe(false);
  });

  it('prefers secrets from the environment over generated ones', () => {
    const dir = dataDir();
    loadConfig({ NODE_ENV: 'development', DATA_DIR: dir });
    const config = loadConfig({ NODE_ENV: 'development', DATA_DIR: dir, JWT_SECRET, ENCRYPTION_KEY });
    expect(config.jwtSecret).toBe(JWT_SECRET);
    expect(config.encryptionKey.equals(Buffer.from(ENCRYPTION_KEY, 'base64'))).toBe(true);
  });

  it('defaults DATA_DIR to ./.data, resolved to an absolute path', () => {
    const config = loadConfig({ NODE_ENV: 'test', JWT_SECRET, ENCRYPTION_KEY });
    expect(config.dataDir).toBe(path.resolve('.data'));
    expect(path.isAbsolute(loadConfig(valid({ DATA_DIR: 'relative/dir' })).dataDir)).toBe(true);
  });
});

describe('webhook delivery settings', () => {
  it('defaults to the schedule of events.md, a 5-day disable window, a 10 s timeout and the production URL policy', () => {
    expect(loadConfig(valid()).webhooks).toEqual({
      deliveryScheduleMs: [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
      disableAfterMs: 5 * 24 * 3_600_000,
      deliveryConcurrency: 16,
      deliveryTimeoutMs: 10_000,
    });
    expect(loadConfig(valid()).urlPolicy).toEqual({ httpsOnly: false, allowPrivateAddresses: true });
    expect(loadConfig(valid({ NODE_ENV: 'production' })).urlPolicy).toEqual({ httpsOnly: true, allowPrivateAddresses: false });
    expect(loadConfig(valid({ NODE_ENV: 'production', WEBHOOK_ALLOW_PRIVATE_URLS: 'true' })).urlPolicy).toEqual({ httpsOnly: true, allowPrivateAddresses: true });
  });

  it('reads a schedule of delays before each attempt', () => {
    expect(loadConfig(valid({ WEBHOOK_DELIVERY_SCHEDULE_MS: '0, 300,600' })).webhooks.deliveryScheduleMs).toEqual([0, 300, 600]);
  });

  it.each(['', 'soon', '0,,300', '0,-5', '1e3', '0,90000000', Array(21).fill('0').join(',')])('rejects the schedule %j naming the variable', (schedule) => {
    expect(configError(valid({ WEBHOOK_DELIVERY_SCHEDULE_MS: schedule })).message).toContain('WEBHOOK_DELIVERY_SCHEDULE_MS');
  });

  it.each([
    ['WEBHOOK_DISABLE_AFTER_MS', '0'],
    ['WEBHOOK_DELIVERY_CONCURRENCY', '0'],
    ['WEBHOOK_DELIVERY_TIMEOUT_MS', '10'],
    ['WEBHOOK_ALLOW_PRIVATE_URLS', 'yes'],
  ])('rejects a bad %s', (variable, value) => {
    expect(configError(valid({ [variable]: value })).message).toContain(variable);
  });
});
