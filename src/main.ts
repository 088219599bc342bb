import { ConfigError, loadConfig } from './config/index.ts';
import { EmbeddedDatabaseError } from './db/embedded.ts';
import { startService } from './server.ts';
import { createLogger } from './shared/logger.ts';

let config;
try {
  config = loadConfig();
} catch (error) {
  const problem = error instanceof ConfigError ? error.message : unwritableDataDir(error);
  if (!problem) throw error;
  console.error(problem);
  process.exit(1);
}

const logger = createLogger(config.logLevel);
const service = await startService(config, logger).catch((error: unknown) => {
  // A set-up problem the operator solves gets one line saying how, like a bad configuration value.
  if (error instanceof EmbeddedDatabaseError) console.error(error.message);
  else logger.fatal({ err: error }, 'start-up failed');
  process.exit(1);
});
logger.info({ role: config.role, url: service.url }, 'service started');

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    service.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  });
}

/** In development loadConfig keeps generated secrets in DATA_DIR: one it cannot write is a set-up problem. */
function unwritableDataDir(error: unknown): string | null {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (!code || !['EACCES', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR'].includes(code)) return null;
  return `invalid configuration: DATA_DIR cannot hold the generated secrets (${(error as Error).message}): set DATA_DIR to a folder this user can write`;
}
