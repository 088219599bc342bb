import './shared/require-node.ts';
import { ConfigError, loadConfig, type Config } from './config/index.ts';
import { EmbeddedDatabaseError } from './db/embedded.ts';
import { startService, StartAborted, type RunningService } from './server.ts';
import { createLogger } from './shared/logger.ts';
import { portInUse, unreachableDatabase, unwritableDataDir } from './shared/start-up-problems.ts';

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  const problem = error instanceof ConfigError ? error.message : unwritableDataDir(error);
  if (!problem) throw error;
  console.error(problem);
  process.exit(1);
}

// Before a whole PostgreSQL starts for nothing.
const busyPort = await portInUse(config.host, config.port);
if (busyPort) {
  console.error(busyPort);
  process.exit(1);
}

const logger = createLogger(config.logLevel);

// Listened for from the start: a SIGTERM or Ctrl-C while the service is still starting (initdb and
// the migrations of a first start take seconds) would otherwise kill node at once and leave its
// embedded PostgreSQL running with nobody to stop it. Start-up stops what it started instead.
const starting = new AbortController();
/** How long a stop asked for during start-up waits for the step in progress before the process exits anyway. */
const START_STOP_TIMEOUT_MS = 15_000;
let service: RunningService | null = null;
let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    if (!service) {
      starting.abort();
      // A step that does not end (a migration lock another process holds, a database that does not
      // answer) must not make the process deaf to stopping: exit anyway, the embedded PostgreSQL
      // signalled by its exit hook (src/db/embedded.ts).
      setTimeout(() => {
        logger.warn({ signal }, 'start-up did not stop in time; exiting');
        process.exit(1);
      }, START_STOP_TIMEOUT_MS).unref();
      return;
    }
    service.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}

service = await startService(config, logger, { signal: starting.signal }).catch((error: unknown) => {
  // Stopped while starting: what had started is stopped already (startService).
  if (error instanceof StartAborted) process.exit(0);
  // A set-up problem the operator solves gets one line saying how, like a bad configuration value.
  const problem = error instanceof EmbeddedDatabaseError ? error.message : unreachableDatabase(error, config.databaseUrl);
  if (problem) console.error(problem);
  else logger.fatal({ err: error }, 'start-up failed');
  process.exit(1);
});
logger.info({ role: config.role, url: service.url }, 'service started');
if (config.production && config.metricsToken === null) logger.warn('METRICS_TOKEN is not set: GET /metrics refuses every scrape in production (401) until it is');
// For the person at the terminal; the JSON lines above are for the log pipeline.
if (service.url) console.error(`ready: API ${service.url}/v1 · docs ${service.url}/docs · console ${service.url}/console (Ctrl-C stops)`);
