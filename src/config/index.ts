import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const integer = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** Environment variables, validated once at start-up (decisions.md, "Configuration"). */
const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: integer(0, 65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  DATA_DIR: z.string().min(1).default('./.data'),
  ROLE: z.enum(['api', 'worker', 'all']).default('all'),
  PLATFORM_BASE_URL: z
    .string()
    .regex(/^https?:\/\/.*\{shopDomain\}/, 'must be an http(s) URL template containing {shopDomain}')
    .optional(),
  SYNC_RETRY_BASE_DELAY_MS: integer(0, 86_400_000).default(30_000),
  WORKER_CONCURRENCY: integer(1, 256).default(8),
  PLATFORM_TIMEOUT_MS: integer(100, 120_000).default(10_000),
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  ENCRYPTION_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}=$/, 'must be 32 bytes, base64-encoded')
    .optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  AUTH_RATE_LIMIT_PER_MINUTE: integer(1, 100_000).default(20),
  TRUST_PROXY: z.enum(['true', 'false']).default('false'),
});

export type Config = ReturnType<typeof buildConfig>;

export class ConfigError extends Error {}

function buildConfig(env: z.infer<typeof EnvSchema>) {
  const dataDir = path.resolve(env.DATA_DIR);
  const production = env.NODE_ENV === 'production';
  return {
    env: env.NODE_ENV,
    production,
    port: env.PORT,
    host: env.HOST,
    databaseUrl: env.DATABASE_URL ?? null,
    dataDir,
    role: env.ROLE,
    runsApi: env.ROLE !== 'worker',
    runsWorker: env.ROLE !== 'api',
    platformBaseUrl: env.PLATFORM_BASE_URL ?? null,
    syncRetryBaseDelayMs: env.SYNC_RETRY_BASE_DELAY_MS,
    workerConcurrency: env.WORKER_CONCURRENCY,
    platformTimeoutMs: env.PLATFORM_TIMEOUT_MS,
    jwtSecret: env.JWT_SECRET ?? localSecret(dataDir, production, 'JWT_SECRET', 'jwt-secret', 48),
    encryptionKey: Buffer.from(
      env.ENCRYPTION_KEY ?? localSecret(dataDir, production, 'ENCRYPTION_KEY', 'encryption-key', 32),
      'base64',
    ),
    logLevel: env.LOG_LEVEL,
    authRateLimitPerMinute: env.AUTH_RATE_LIMIT_PER_MINUTE,
    trustProxy: env.TRUST_PROXY === 'true',
  };
}

/** Parses the environment; a bad value throws a ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`invalid configuration: ${issue.path.join('.')} ${issue.message}`);
  }
  return buildConfig(parsed.data);
}

/**
 * In development a missing secret is generated once and kept under DATA_DIR, so restarts keep
 * sessions and can still decrypt stored store tokens. Production must be given the secret.
 */
function localSecret(dataDir: string, production: boolean, variable: string, file: string, bytes: number): string {
  if (production) throw new ConfigError(`invalid configuration: ${variable} is required when NODE_ENV=production`);
  const secretsDir = path.join(dataDir, 'secrets');
  const secretPath = path.join(secretsDir, file);
  if (existsSync(secretPath)) return readFileSync(secretPath, 'utf8').trim();
  mkdirSync(secretsDir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(bytes).toString('base64');
  writeFileSync(secretPath, secret, { mode: 0o600, flag: 'wx' });
  return secret;
}
