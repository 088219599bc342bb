import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { createApp, createOperationsApp } from './app.ts';
import { AccessTokens } from './auth/tokens.ts';
import type { Config } from './config/index.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded.ts';
import { answerEverythingInTheEnvelope } from './http/client-error.ts';
import { connectOrm } from './database.ts';
import { sqlOf } from './db/sql.ts';
import { Outbox } from './events/outbox.ts';
import { createPlatformAdapters } from './platforms/index.ts';
import { Metrics } from './metrics/index.ts';
import { SharedPacer } from './pacing/pacer.ts';
import { Queue } from './queue/queue.ts';
import { startReconciliationScheduler } from './reconciliation/scheduler.ts';
import { startWatchScheduler } from './divergence-watch/scheduler.ts';
import { createServices, type Infrastructure } from './services.ts';
import { SecretBox } from './shared/secrets.ts';
import { guardedAgent } from './shared/url-safety.ts';
import { oldestPendingDeliveryAt } from './webhook-endpoints/repository.ts';
import { startWorkers } from './workers/index.ts';
import { ATTEMPT_QUEUES } from './workers/kinds.ts';

export interface RunningService {
  /** Base URL of the HTTP API, when this process serves it. */
  url: string | null;
  /** What the process is built on (tests reach its database, queue and metrics through it). */
  ctx: Infrastructure;
  stop: () => Promise<void>;
}

/** Thrown by `startService` when its `signal` aborted (a SIGTERM before it finished): what it had started is stopped. */
export class StartAborted extends Error {
  constructor() {
    super('start-up stopped: a stop was asked for before the service finished starting');
  }
}

/**
 * Starts everything this process's ROLE needs, in dependency order: the database (embedded when
 * no DATABASE_URL), migrations, the queue, then the HTTP API and/or the workers. `stop` undoes it
 * in reverse, letting requests and jobs in flight finish. A `signal` aborted while it starts (a
 * SIGTERM during a slow first start: initdb, migrations) stops what it started so far, the embedded
 * PostgreSQL last, once the step in progress ends, and rejects with StartAborted.
 */
export async function startService(config: Config, logger: Logger, options: { signal?: AbortSignal } = {}): Promise<RunningService> {
  const stack: (() => Promise<void>)[] = [];
  const stop = async () => {
    while (stack.length > 0) await stack.pop()!().catch((error) => logger.error({ err: error }, 'shutdown step failed'));
  };
  const checkpoint = () => {
    if (options.signal?.aborted) throw new StartAborted();
  };
  try {
    checkpoint();
    const databaseUrl = config.databaseUrl ?? (await startEmbedded(config, logger, stack));
    checkpoint();
    const orm = await connectOrm(databaseUrl);
    stack.push(() => orm.close());
    checkpoint();
    // After the queue stopped and before the database closes: attempts let go of by their batches finish.
    let drainWorkers = async () => {};
    stack.push(() => drainWorkers());
    const queue = await Queue.start({ connectionString: databaseUrl, logger, supervise: config.runsWorker, queues: ATTEMPT_QUEUES });
    stack.push(() => queue.stop());
    checkpoint();

    const metrics = new Metrics(() => queue.depth());
    const pacer = new SharedPacer(sqlOf(orm), config.platformPacing);
    const ctx: Infrastructure = {
      config,
      metrics,
      orm,
      logger,
      queue,
      outbox: new Outbox(queue, config.webhooks.deliveryScheduleMs[0]!),
      pacer,
      secrets: new SecretBox(config.encryptionKey),
      tokens: new AccessTokens(config.jwtSecret),
      platforms: createPlatformAdapters({
        baseUrlTemplate: config.platformBaseUrl ?? undefined,
        timeoutMs: config.platformTimeoutMs,
        pacer,
        maxRetryAfterMs: config.maxRetryAfterMs,
        observe: metrics.observePlatformCall,
        // Stores reached by their own domain: checked on every connection, like webhook endpoints.
        ...(!config.platformBaseUrl && !config.urlPolicy.allowPrivateAddresses && { dispatcher: guardedAgent(config.urlPolicy) }),
      }),
    };
    metrics.observeOldestPendingDelivery(() => oldestPendingDeliveryAt(sqlOf(orm)));
    const services = createServices(ctx);
    // Workers stop with the queue (graceful: jobs in flight finish), which the stack stops after HTTP,
    // the reconciliation scheduler and the sweep; long runs (reconciliation, divergence watch) in
    // progress are handed back first (`workers.stop`), for another process to go on with at once.
    if (config.runsWorker) {
      const workers = await startWorkers(ctx, {
        runs: {
          reconciliation: ({ reconciliationId }, stopping) => services.reconciliationRunner.execute(reconciliationId, stopping),
          divergenceWatch: ({ watchPassId }, stopping) => services.watchRunner.execute(watchPassId, stopping),
        },
        // What features do after each sweep pass: the fulfillments feature claims held fulfillments, the
        // cancellations feature held supplier cancellations; outbound webhooks rescue deliveries whose
        // message is gone or was given up.
        sweepHooks: [
          () => services.fulfillments.claimHeld(),
          () => services.cancellations.claimHeld(),
          () => services.webhookEndpoints.rescueStrandedDeliveries(new Date(Date.now() - config.webhooks.deliveryTimeoutMs - config.sweepIntervalMs)),
        ],
        events: services.eventRepository,
      });
      drainWorkers = workers.drain;
      stack.push(workers.stop);
      stack.push(startReconciliationScheduler(ctx, services.reconciliations));
      metrics.observeReconciliationLag(() => services.reconciliations.lagByStore());
      stack.push(startWatchScheduler(ctx, services.divergences));
      metrics.observeDivergences(() => services.divergences.openSummary());
    }
    const url = config.runsApi
      ? await listen(createApp(ctx, services), config, logger, stack, 'HTTP API listening')
      : await listen(createOperationsApp(ctx), config, logger, stack, 'operations endpoints listening').then(() => null);
    checkpoint();
    return { url, ctx, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function startEmbedded(config: Config, logger: Logger, stack: (() => Promise<void>)[]): Promise<string> {
  const db: EmbeddedDatabase = await startEmbeddedPostgres({
    dataDir: config.dataDir,
    // Should it die under the running service (the OOM killer, a stray kill), it is started again.
    restartWhenLost: true,
    onLog: (line) => logger.debug({ component: 'postgres' }, line),
    onNotice: (line) => logger.warn({ component: 'postgres' }, line),
  });
  stack.push(() => db.stop());
  logger.info({ port: db.port, dataDir: config.dataDir, clusterDir: db.clusterDir }, 'embedded PostgreSQL started');
  return db.url();
}

async function listen(
  app: ReturnType<typeof createApp>,
  config: Config,
  logger: Logger,
  stack: (() => Promise<void>)[],
  message: string,
): Promise<string> {
  const server: Server = await new Promise((resolve, reject) => {
    // A missing Host is answered by the app (requireHost), in the error envelope, not by Node.
    const s = createServer({ requireHostHeader: false }, app).listen(config.port, config.host, () => resolve(s));
    s.once('error', reject);
  });
  // A platform waits 5 s for a webhook answer; keep-alive a little longer than typical LBs.
  server.keepAliveTimeout = 65_000;
  answerEverythingInTheEnvelope(server, logger);
  stack.push(() => closeServer(server));
  const { port } = server.address() as AddressInfo;
  const url = `http://${urlHost(config.host)}:${port}`;
  logger.info({ port, url }, message);
  return url;
}

/**
 * How a client on this machine reaches HOST: every interface by loopback (0.0.0.0 by 127.0.0.1, :: by
 * [::1]), an IPv6 address in brackets, as a URL writes it.
 */
function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '[::1]';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** Stops accepting connections and waits for requests in flight; idle keep-alive sockets close now. */
function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 10_000).unref();
  });
}
