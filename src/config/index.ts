import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { PLATFORMS, type Platform } from '../orders/types.ts';
import type { PacingRate } from '../platforms/pacer.ts';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Whole numbers written as digits. `z.coerce.number()` alone reads "" as 0 (an empty `PORT=` would
 * silently bind a random port) and accepts "1e3" or "0x10"; those become NaN and are rejected.
 */
const integer = (min: number, max: number) =>
  z.preprocess(
    (value) => (typeof value === 'string' && !/^\s*-?\d+\s*$/.test(value) ? Number.NaN : value),
    z.coerce.number().int().min(min).max(max),
  );

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
  WORKER_CONCURRENCY: integer(1, 256).default(64),
  PLATFORM_TIMEOUT_MS: integer(100, 120_000).default(10_000),
  WEBHOOK_STORE_CACHE_TTL_MS: integer(0, 60_000).default(0),
  RECONCILE_INTERVAL_MS: integer(0, 86_400_000).default(300_000),
  RECONCILE_GRACE_MS: integer(0, 86_400_000).default(120_000),
  SWEEP_INTERVAL_MS: integer(100, 3_600_000).default(60_000),
  PLATFORM_PACING: z
    .string()
    .optional()
    .transform((value, ctx) => {
      const pacing = value === undefined ? {} : parsePacing(value);
      if (pacing === null) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be a list like "*=50:100" or "platform_a=2:40,custom=10:40" (platform=perSecond:burst)' });
        return z.NEVER;
      }
      return pacing;
    }),
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
    /** How long the order webhook reuses a store look-up; 0 = never (src/webhooks/service.ts). */
    webhookStoreCacheTtlMs: env.WEBHOOK_STORE_CACHE_TTL_MS,
    /** How often each active reseller store is reconciled; 0 = never (src/reconciliation/). */
    reconcileIntervalMs: env.RECONCILE_INTERVAL_MS,
    /** Orders younger than this are left to their webhook by reconciliation. */
    reconcileGraceMs: env.RECONCILE_GRACE_MS,
    /** How often a worker process sweeps for stranded work (src/attempts/sweep.ts); one process at a time. */
    sweepIntervalMs: env.SWEEP_INTERVAL_MS,
    /** Per-store pacing overrides by platform; empty = the platforms' defaults. */
    platformPacing: env.PLATFORM_PACING,
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
 * `platform=perSecond:burst` entries separated by commas; `*` stands for every platform and a
 * named platform overrides it. Null when the text does not parse.
 */
function parsePacing(text: string): Partial<Record<Platform, PacingRate>> | null {
  const pacing: Partial<Record<Platform, PacingRate>> = {};
  const entries = text.split(',').map((entry) => entry.trim());
  const parsed = entries.map((entry) => /^(\*|[a-z_]+)=(\d+(?:\.\d+)?):(\d+)$/.exec(entry));
  if (parsed.some((match) => match === null)) return null;
  // The wildcard first, so a named platform wins whatever the order.
  for (const match of [...parsed].sort((a, b) => Number(b![1] === '*') - Number(a![1] === '*'))) {
    const [, name, perSecond, burst] = match!;
    const rate = { perSecond: Number(perSecond), burst: Number(burst) };
    if (!(rate.perSecond > 0) || !(rate.burst >= 1)) return null;
    if (name === '*') PLATFORMS.forEach((platform) => (pacing[platform] = rate));
    else if ((PLATFORMS as readonly string[]).includes(name!)) pacing[name as Platform] = rate;
    else return null;
  }
  return pacing;
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
