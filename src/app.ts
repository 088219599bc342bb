import { RequestContext } from '@mikro-orm/core';
import { createExpressEndpoints } from '@ts-rest/express';
import cookieParser from 'cookie-parser';
import express, { type Express } from 'express';
import { rateLimit } from 'express-rate-limit';
import { pinoHttp } from 'pino-http';
import { contract } from '../contract/index.ts';
import { buildOpenApiDocument } from '../contract/openapi.ts';
import { apiKeyRoutes } from './api-keys/routes.ts';
import { auditLogRoutes } from './audit-log/routes.ts';
import { authRoutes } from './auth/routes.ts';
import type { AppContext } from './context.ts';
import { docsRoutes } from './docs/routes.ts';
import { healthRoutes } from './health/routes.ts';
import { authenticate } from './http/authenticate.ts';
import { jsonBody, requireJson } from './http/body.ts';
import { errorHandler, notFoundHandler, sendError } from './http/errors.ts';
import { recordHttpMetrics } from './http/metrics.ts';
import { requestId } from './http/request-id.ts';
import { onRequestValidationError } from './http/validation.ts';
import { resellerStoreRoutes } from './reseller-stores/routes.ts';
import type { Services } from './services.ts';
import { AppError } from './shared/errors.ts';
import { sourceStoreRoutes } from './source-stores/routes.ts';
import { syncJobRoutes } from './sync-jobs/routes.ts';
import { WEBHOOK_PATHS, webhookIntake } from './webhooks/intake.ts';
import { webhookRoutes } from './webhooks/routes.ts';

const serveMetrics = (ctx: AppContext) => async (_req: express.Request, res: express.Response) => {
  res.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics());
};

/**
 * What a ROLE=worker process serves: liveness, readiness and its own metrics (job transitions and
 * platform calls are counted where the jobs run), nothing of the API.
 */
export function createOperationsApp(ctx: AppContext): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestId);
  app.get('/metrics', serveMetrics(ctx));
  createExpressEndpoints(contract.health, healthRoutes(ctx), app, { responseValidation: true });
  app.use(notFoundHandler);
  app.use(errorHandler(ctx.logger));
  return app;
}

export function createApp(ctx: AppContext, services: Services): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', ctx.config.trustProxy);
  app.set('etag', false);

  app.use(requestId);
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
  app.use([WEBHOOK_PATHS.orders, WEBHOOK_PATHS.fulfillments], webhookIntake(services.webhooks));
  app.use(requireJson, jsonBody, cookieParser());
  // One ORM identity map per request; services read it through `orm.em`.
  app.use((_req, _res, next) => RequestContext.create(ctx.orm.em, next));

  const authLimiter = rateLimit({
    windowMs: 60_000,
    limit: ctx.config.authRateLimitPerMinute,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    handler: (req, res) => {
      const resetTime = (req as express.Request & { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
      const retryAfterSeconds = Math.max(1, Math.ceil(((resetTime?.getTime() ?? Date.now() + 60_000) - Date.now()) / 1000));
      sendError(req, res, new AppError('rate_limited', { retryAfterSeconds }));
    },
  });
  app.use(['/v1/auth/register', '/v1/auth/login', '/v1/auth/refresh'], authLimiter);

  app.get('/metrics', serveMetrics(ctx));

  const openApiDocument = buildOpenApiDocument();
  app.get('/openapi.json', (_req, res) => {
    res.json(openApiDocument);
  });
  app.use(docsRoutes());

  const options = {
    globalMiddleware: [authenticate(services.apiKeys, ctx.tokens)],
    requestValidationErrorHandler: onRequestValidationError,
    responseValidation: true,
  } as const;
  const routers = [
    [contract.health, healthRoutes(ctx)],
    [contract.auth, authRoutes(services.auth, ctx.config)],
    [contract.apiKeys, apiKeyRoutes(services.apiKeys)],
    [contract.resellerStores, resellerStoreRoutes(services.resellerStores)],
    [contract.sourceStores, sourceStoreRoutes(services.sourceStores)],
    [contract.syncJobs, syncJobRoutes(services.syncJobs)],
    [contract.auditLog, auditLogRoutes(services.auditLog)],
    [contract.webhooks, webhookRoutes(services.webhooks)],
  ] as const;
  for (const [routes, implementation] of routers) {
    createExpressEndpoints(routes, implementation as never, app, options as never);
  }

  app.use(notFoundHandler);
  app.use(errorHandler(ctx.logger));
  return app;
}
