import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { makeDirectories } from '../shared/directories.ts';
import { z } from 'zod';
import { PLATFORMS, type Platform } from '../../contract/enums.ts';
import type { PacingRate } from '../pacing/rates.ts';

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

/** Standard delays before each delivery attempt (events.md): at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. */
const DEFAULT_DELIVERY_SCHEDULE_MS = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];

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
  QUEUE_IDLE_POLL_MS: integer(10, 5_000).default(50),
  PLATFORM_TIMEOUT_MS: integer(100, 120_000).default(10_000),
  WEBHOOK_STORE_CACHE_TTL_MS: integer(0, 60_000).default(0),
  RECONCILE_INTERVAL_MS: integer(0, 86_400_000).default(300_000),
  RECONCILE_GRACE_MS: integer(0, 86_400_000).default(120_000),
  DIVERGENCE_INTERVAL_MS: integer(0, 86_400_000).default(300_000),
  STALE_AFTER_MS: integer(1, 365 * 86_400_000).default(7 * 86_400_000),
  SWEEP_INTERVAL_MS: integer(100, 3_600_000).default(60_000),
  // events.md: events are kept at least 30 days.
  EVENT_RETENTION_DAYS: integer(30, 3_650).default(30),
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
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  ENCRYPTION_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}=$/, 'must be 32 bytes, base64-encoded')
    .optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  AUTH_RATE_LIMIT_PER_MINUTE: integer(1, 100_000).default(20),
  MAX_RETRY_AFTER_MS: integer(1_000, 86_400_000).default(600_000),
  MAX_SOURCE_STORES_PER_USER: integer(1, 1_000_000).default(500),
  WEBHOOK_SIGNATURE_FAILURES_PER_MINUTE: integer(1, 1_000_000).default(60),
  TRUST_PROXY: z
    .string()
    .regex(/^(true|false|[1-9]|10)$/, 'must be true, false or the number of proxies in front (1-10)')
    .default('false'),
  WEBHOOK_DELIVERY_SCHEDULE_MS: z
    .string()
    .default(DEFAULT_DELIVERY_SCHEDULE_MS.join(','))
    .transform((value, ctx) => {
      const schedule = parseSchedule(value);
      if (schedule === null) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be 1 to 20 comma-separated delays in milliseconds, e.g. "0,5000,300000"' });
        return z.NEVER;
      }
      return schedule;
    }),
  WEBHOOK_DISABLE_AFTER_MS: integer(1, 365 * 86_400_000).default(5 * 86_400_000),
  WEBHOOK_DELIVERY_CONCURRENCY: integer(1, 256).default(16),
  WEBHOOK_DELIVERY_TIMEOUT_MS: integer(100, 120_000).default(10_000),
  WEBHOOK_ALLOW_PRIVATE_URLS: z.enum(['true', 'false']).default('false'),
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
    /** How often one loop per queue of retried work polls it while it is empty (src/queue/idle-loops.ts). */
    queueIdlePollMs: env.QUEUE_IDLE_POLL_MS,
    platformTimeoutMs: env.PLATFORM_TIMEOUT_MS,
    /** How long the order webhook reuses a store look-up; 0 = never (src/webhooks/service.ts). */
    webhookStoreCacheTtlMs: env.WEBHOOK_STORE_CACHE_TTL_MS,
    /** How often each active reseller store is reconciled; 0 = never (src/reconciliation/). */
    reconcileIntervalMs: env.RECONCILE_INTERVAL_MS,
    /** Orders younger than this are left to their webhook by reconciliation. */
    reconcileGraceMs: env.RECONCILE_GRACE_MS,
    /** How often each active reseller store and its suppliers are compared by the divergence watch; 0 = never (src/divergence-watch/). */
    divergenceIntervalMs: env.DIVERGENCE_INTERVAL_MS,
    /** A placed job with no tracking for this long is stale. */
    staleAfterMs: env.STALE_AFTER_MS,
    /** How often a worker process sweeps for stranded work (src/attempts/sweep.ts); one process at a time. */
    sweepIntervalMs: env.SWEEP_INTERVAL_MS,
    eventRetentionDays: env.EVENT_RETENTION_DAYS,
    /** Per-store pacing overrides by platform; empty = the platforms' defaults. */
    platformPacing: env.PLATFORM_PACING,
    jwtSecret: env.JWT_SECRET ?? localSecret(dataDir, production, 'JWT_SECRET', 'jwt-secret', 48),
    /** When set, GET /metrics answers only `Authorization: Bearer <token>` (a scraper's credential); unset, it is open. */
    metricsToken: env.METRICS_TOKEN ?? null,
    encryptionKey: Buffer.from(
      env.ENCRYPTION_KEY ?? localSecret(dataDir, production, 'ENCRYPTION_KEY', 'encryption-key', 32),
      'base64',
    ),
    logLevel: env.LOG_LEVEL,
    authRateLimitPerMinute: env.AUTH_RATE_LIMIT_PER_MINUTE,
    /** The longest pause a 429's Retry-After can impose on a store (src/platforms/http.ts). */
    maxRetryAfterMs: env.MAX_RETRY_AFTER_MS,
    /** Active source stores one user may have (each is a secret a fulfillment webhook may be checked against). */
    maxSourceStoresPerUser: env.MAX_SOURCE_STORES_PER_USER,
    /** Failed fulfillment-webhook signatures per minute, per client and per shop domain, before 429 (src/webhooks/). */
    webhookSignatureFailuresPerMinute: env.WEBHOOK_SIGNATURE_FAILURES_PER_MINUTE,
    // `true` is one proxy (the load balancer): the client is the address it saw, not one a client wrote into the header.
    trustedProxyHops: env.TRUST_PROXY === 'true' ? 1 : env.TRUST_PROXY === 'false' ? 0 : Number(env.TRUST_PROXY),
    webhooks: {
      /** Delay before each attempt of a delivery, in ms; its length is the number of attempts. */
      deliveryScheduleMs: env.WEBHOOK_DELIVERY_SCHEDULE_MS,
      /** An endpoint whose deliveries have all failed for this long is disabled. */
      disableAfterMs: env.WEBHOOK_DISABLE_AFTER_MS,
      /** Deliveries one worker process sends at once (each endpoint gets at most DELIVERIES_PER_ENDPOINT). */
      deliveryConcurrency: env.WEBHOOK_DELIVERY_CONCURRENCY,
      /** A delivery attempt not answered with a 2xx within this long failed. */
      deliveryTimeoutMs: env.WEBHOOK_DELIVERY_TIMEOUT_MS,
    },
    /**
     * Outbound URLs (webhook endpoints, and store domains when no PLATFORM_BASE_URL is set) may
     * reach loopback, private, link-local and similar addresses: always outside production, and
     * in production only when WEBHOOK_ALLOW_PRIVATE_URLS=true (src/shared/url-safety.ts).
     */
    urlPolicy: { httpsOnly: production, allowPrivateAddresses: !production || env.WEBHOOK_ALLOW_PRIVATE_URLS === 'true' },
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

/** Whole milliseconds separated by commas, each at most a day; null when the text does not parse. */
function parseSchedule(text: string): number[] | null {
  const parts = text.split(',').map((part) => part.trim());
  if (parts.length < 1 || parts.length > 20 || parts.some((part) => !/^\d{1,9}$/.test(part))) return null;
  const delays = parts.map(Number);
  return delays.every((delay) => delay <= 86_400_000) ? delays : null;
}

/** What a generated secret must look like to be used: the rules of its environment variable. */
const SECRET_SHAPES = {
  JWT_SECRET: (text: string) => text.length >= 32,
  ENCRYPTION_KEY: (text: string) => /^[A-Za-z0-9+/]{43}=$/.test(text),
} as const;

/**
 * In development a missing secret is generated once and kept under DATA_DIR, so restarts keep
 * sessions and can still decrypt stored store tokens. Production must be given the secret.
 *
 * The file appears whole or not at all (written aside, then linked into place), so processes
 * starting together on one DATA_DIR (ROLE=api and ROLE=worker) all read the one that won, never a
 * file another is still writing. A file that holds no usable secret (empty, cut short) stops the
 * start naming it: it is never replaced, since the key may have sealed store credentials.
 */
function localSecret(dataDir: string, production: boolean, variable: keyof typeof SECRET_SHAPES, file: string, bytes: number): string {
  if (production) throw new ConfigError(`invalid configuration: ${variable} is required when NODE_ENV=production`);
  const secretsDir = path.join(dataDir, 'secrets');
  const secretPath = path.join(secretsDir, file);
  if (!existsSync(secretPath)) {
    makeDirectories(secretsDir, 0o700);
    const aside = `${secretPath}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(aside, randomBytes(bytes).toString('base64'), { mode: 0o600, flag: 'wx' });
    try {
      linkSync(aside, secretPath);
    } catch (error) {
      // Another process generated it meanwhile: theirs is the one.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      rmSync(aside, { force: true });
    }
  }
  const secret = readFileSync(secretPath, 'utf8').trim();
  if (!SECRET_SHAPES[variable](secret)) {
    const consequence = variable === 'ENCRYPTION_KEY' ? 'store credentials sealed with it can then no longer be read' : 'signed-in sessions end';
    throw new ConfigError(
      `invalid configuration: ${variable} generated in ${secretPath} is not a usable secret (empty or cut short): set ${variable}, or remove the file to generate a new one (${consequence})`,
    );
  }
  return secret;
}
