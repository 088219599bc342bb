import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { RouteMetadata, WebhookSender } from '../../contract/common.ts';
import { parseJsonBody, readRawBody, step } from './body.ts';

type Authenticate = (req: Request, kind: 'bearer' | 'access_token') => Promise<void>;
type VerifyWebhook = (req: Request, sender: WebhookSender, rawBody: Buffer) => Promise<void>;

export interface PipelineSteps {
  /** Bearer credentials: a JWT or an API key, or only a JWT (src/http/authenticate.ts). */
  authenticate: Authenticate;
  /** A webhook's signature (src/webhooks/intake.ts). */
  verifyWebhook: VerifyWebhook;
  /** The limiter of `rateLimited` routes (src/http/rate-limit.ts). */
  rateLimiter: RequestHandler;
}

/**
 * ts-rest's global middleware: what runs before every contract route's handler besides schema
 * validation, chosen by the route's metadata (contract/common.ts `RouteMetadata`), in this order:
 *
 * 1. a signed route (`auth: 'webhook'`) reads its body as bytes and verifies the signature over
 *    them (413, then 401) before anything looks at them;
 * 2. the body: JSON only (415), parsed (400, 413), no text PostgreSQL cannot store (400);
 * 3. a `rateLimited` route counts the request (429);
 * 4. a `bearer` route (the default) authenticates the caller (401), an `access_token` route too,
 *    with a JWT only.
 *
 * ts-rest then validates the route's path, query, headers and body against the contract (400).
 */
export function routePipeline(steps: PipelineSteps) {
  return async (req: Request & { tsRestRoute?: { metadata?: unknown } }, res: Response, next: NextFunction): Promise<void> => {
    const route = (req.tsRestRoute?.metadata as RouteMetadata | undefined) ?? { auth: 'bearer' };
    if (route.auth === 'webhook') await steps.verifyWebhook(req, route.signedBy!, await readRawBody(req, res));
    await parseJsonBody(req, res);
    if (route.rateLimited) await step(steps.rateLimiter, req, res);
    if (route.auth === 'bearer' || route.auth === 'access_token') await steps.authenticate(req, route.auth);
    next();
  };
}
