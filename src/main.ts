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
let service: RunningService | null = null;
let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    if (!service) {
      starting.abort();
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
// For the person at the terminal; the JSON lines above are for the log pipeline.
if (service.url) console.error(`ready: API ${service.url}/v1 · docs ${service.url}/docs · console ${service.url}/console (Ctrl-C stops)`);
