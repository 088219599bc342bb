import type { Logger } from 'pino';
import type { AccessTokens } from './auth/tokens.ts';
import type { Config } from './config/index.ts';
import type { Orm } from './db/orm.ts';
import type { Outbox } from './events/outbox.ts';
import type { Metrics } from './metrics/index.ts';
import type { SharedPacer } from './pacing/pacer.ts';
import type { PlatformAdapter } from './platforms/types.ts';
import type { Platform } from './orders/types.ts';
import type { Queue } from './queue/queue.ts';
import type { SecretBox } from './shared/secrets.ts';

/** Everything a service needs, built once at start-up (src/main.ts) and passed down. */
export interface AppContext {
  config: Config;
  orm: Orm;
  logger: Logger;
  secrets: SecretBox;
  tokens: AccessTokens;
  platforms: Record<Platform, PlatformAdapter>;
  /** Every store's turns to be called, shared with every process (src/pacing/). */
  pacer: SharedPacer;
  queue: Queue;
  metrics: Metrics;
  /** Events for integrators, appended in the transaction of the change they report. */
  outbox: Outbox;
}
