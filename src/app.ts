import { createHash, timingSafeEqual } from 'node:crypto';
import { createExpressEndpoints } from '@ts-rest/express';
import cookieParser from 'cookie-parser';
import express, { type Express } from 'express';
import { pinoHttp } from 'pino-http';
import { contract } from '../contract/index.ts';
import { buildOpenApiDocument } from '../contract/openapi.ts';
import { apiKeyRoutes } from './api-keys/routes.ts';
import { auditLogRoutes } from './audit-log/routes.ts';
import { authRoutes } from './auth/routes.ts';
import type { Config } from './config/index.ts';
import { consoleRoutes } from './console/routes.ts';
import { docsRoutes } from './docs/routes.ts';
import { eventRoutes } from './events/routes.ts';
import { healthRoutes } from './health/routes.ts';
import { authenticate } from './http/authenticate.ts';
import { requireHost } from './http/client-error.ts';
import { errorHandler, notFoundHandler } from './http/errors.ts';
import { AppError } from './shared/errors.ts';
import { recordHttpMetrics } from './http/metrics.ts';
import { routePipeline } from './http/pipeline.ts';
import { perMinuteLimiter } from './http/rate-limit.ts';
import { requestScope } from './db/request-scope.ts';
import { pingDatabase } from './db/sql.ts';
import type { Metrics } from './metrics/index.ts';
import { requestId } from './http/request-id.ts';
import { onRequestValidationError } from './http/validation.ts';
import { reconciliationRoutes } from './reconciliation/routes.ts';
import { divergenceRoutes } from './divergence-watch/routes.ts';
import { resellerStoreRoutes } from './reseller-stores/routes.ts';
import type { Infrastructure, Services } from './services.ts';
import { sourceStoreRoutes } from './source-stores/routes.ts';
import { syncJobRoutes } from './sync-jobs/routes.ts';
import { cancellationRoutes } from './cancellations/routes.ts';
import { fulfillmentRoutes } from './fulfillments/routes.ts';
import { presentDetail } from './sync-jobs/present.ts';
import { webhookEndpointRoutes } from './webhook-endpoints/routes.ts';
import { verifyWebhook } from './webhooks/intake.ts';
import { webhookRoutes } from './webhooks/routes.ts';

/**
 * GET /metrics. With METRICS_TOKEN, only to `Authorization: Bearer <token>` (compared in constant
 * time): its series name stores and their activity, and a scrape runs queries. Without it, open
 * outside production and closed in production (secure by default: the operator sets a token).
 */
const serveMetrics = (metrics: Metrics, { metricsToken: token, production }: Config) => async (req: express.Request, res: express.Response, next: express.NextFunction) => {
  if (token === null && production) {
    next(new AppError('unauthorized', { message: 'GET /metrics is closed in production until METRICS_TOKEN is set; scrape it with Authorization: Bearer <METRICS_TOKEN>.' }));
    return;
  }
  if (token !== null && !bearerMatches(req.headers.authorization, token)) {
    next(new AppError('unauthorized', { message: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.' }));
    return;
  }
  res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
};

function bearerMatches(header: string | undefined, token: string): boolean {
  const given = createHash('sha256').update(header ?? '').digest();
  return timingSafeEqual(given, createHash('sha256').update(`Bearer ${token}`).digest());
}

/** Readiness: the database and the queue answer. */
const readiness = ({ orm, queue }: Pick<Infrastructure, 'orm' | 'queue'>) => healthRoutes({ database: () => pingDatabase(orm), queue: () => queue.ping() });

/**
 * What a ROLE=worker process serves: liveness, readiness and its own metrics (job transitions and
 * platform calls are counted where the jobs run), nothing of the API.
 */
export function createOperationsApp(ctx: Infrastructure): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestId, requireHost);
  app.get('/metrics', serveMetrics(ctx.metrics, ctx.config));
  createExpressEndpoints(contract.health, readiness(ctx), app, { responseValidation: true });
  app.use(notFoundHandler);
  app.use(errorHandler(ctx.logger));
  return app;
}

export function createApp(ctx: Infrastructure, services: Services): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', ctx.config.trustedProxyHops > 0 ? ctx.config.trustedProxyHops : false);
  app.set('etag', false);

  app.use(requestId, requireHost);
  app.use(recordHttpMetrics(ctx.metrics));
  app.use(
    pinoHttp({
      logger: ctx.logger,
      genReqId: (req) => (req as express.Request).requestId,
      customProps: (req) => ({ request_id: (req as express.Request).requestId }),
      serializers: {
        req: (req: { method: string; url: string }) => ({ method: req.method, url: req.url }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      autoLogging: { ignore: (req) => req.url === '/healthz' || req.url === '/metrics' },
    }),
  );
  app.use(cookieParser());
  // API answers carry tokens, secrets shown once and the caller's own data: no cache keeps them.
  app.use('/v1', (_req, res, next) => {
    res.set('Cache-Control', 'no-store');
    next();
  });
  // One ORM identity map per request; repositories read it through `orm.em`. The orders and
  // fulfillments webhooks' intake forks its own, so those two paths get none (the per-store
  // fulfillments path, with its parameter, keeps one: harmless, only not saved).
  app.use(requestScope(ctx.orm, new Set([contract.webhooks.orders.path, contract.webhooks.fulfillments.path])));

  app.get('/metrics', serveMetrics(ctx.metrics, ctx.config));

  const openApiDocument = buildOpenApiDocument();
  app.get('/openapi.json', (_req, res) => {
    res.json(openApiDocument);
  });
  app.use(docsRoutes());
  app.use(consoleRoutes());
  // A person who opens the service's address in a browser lands where an operator starts.
  app.get('/', (_req, res) => res.redirect(302, '/console'));

  const options = {
    // Body, webhook signature, rate limit and authentication, as each route's metadata says.
    globalMiddleware: [
      routePipeline({
        authenticate: authenticate(services.apiKeys, ctx.tokens),
        verifyWebhook: verifyWebhook(services.webhooks),
        rateLimiter: perMinuteLimiter(ctx.config.authRateLimitPerMinute, services.counters),
      }),
    ],
    requestValidationErrorHandler: onRequestValidationError,
    responseValidation: true,
  } as const;
  const routers = [
    [contract.health, readiness(ctx)],
    [contract.auth, authRoutes(services.auth, ctx.config)],
    [contract.apiKeys, apiKeyRoutes(services.apiKeys)],
    [contract.resellerStores, resellerStoreRoutes(services.resellerStores)],
    [contract.reconciliations, reconciliationRoutes(services.reconciliations)],
    [contract.divergences, divergenceRoutes(services.divergences)],
    [contract.sourceStores, sourceStoreRoutes(services.sourceStores)],
    [contract.syncJobs, syncJobRoutes(services.syncJobs)],
    [contract.cancellations, cancellationRoutes(services.cancellations)],
    [contract.fulfillments, fulfillmentRoutes(services.fulfillments, async (principal, id) => presentDetail(await services.syncJobs.get(principal, id)))],
    [contract.auditLog, auditLogRoutes(services.auditLog)],
    [contract.webhooks, webhookRoutes(services.webhooks)],
    [contract.events, eventRoutes(services.events)],
    [contract.webhookEndpoints, webhookEndpointRoutes(services.webhookEndpoints)],
  ] as const;
  for (const [routes, implementation] of routers) {
    // An event is answered as it was stored and delivered (events.md: the resource as its GET showed it
    // *then*): one kept from an earlier release lacks fields added to the resource since, and today's
    // schemas would turn it into a 500 (or strip what they do not know). Its payload was built by the
    // typed presenters when it was written.
    const validated = routes !== contract.events;
    createExpressEndpoints(routes, implementation as never, app, { ...options, responseValidation: validated } as never);
  }

  app.use(notFoundHandler);
  app.use(errorHandler(ctx.logger));
  return app;
}
