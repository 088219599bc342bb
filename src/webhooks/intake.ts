import express, { type NextFunction, type Request, type Response } from 'express';
import { MAX_BODY_BYTES, unstorable, unstorableIn } from '../http/body.ts';
import { AppError } from '../shared/errors.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import type { Delivery, WebhookService } from './service.ts';

export const WEBHOOK_PATHS = { orders: '/v1/orders/webhook', fulfillments: '/v1/fulfillments/webhook' } as const;

declare module 'express-serve-static-core' {
  interface Request {
    webhook?: { delivery: Delivery; resellerStore?: ResellerStore; sourceStores?: SourceStore[] };
  }
}

/** Webhook bodies are read as bytes whatever their content type: the signature covers the bytes. */
const rawBody = express.raw({ type: () => true, limit: MAX_BODY_BYTES });

function deliveryOf(req: Request): Delivery {
  return {
    shopDomain: req.get('x-platform-shop-domain'),
    signature: req.get('x-platform-hmac-sha256'),
    topic: req.get('x-platform-topic'),
    webhookId: req.get('x-platform-webhook-id'),
    rawBody: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
  };
}

/**
 * Runs before the JSON parser and the contract's validation: verify the signature over the exact
 * bytes received (401 invalid_signature, nothing written), then require JSON (415) and parse it
 * (400). Only a verified body is ever looked at.
 */
export function webhookIntake(webhooks: WebhookService) {
  const verify = async (req: Request, _res: Response, next: NextFunction) => {
    // Only POST is a delivery; anything else falls through to the router (404).
    if (req.method !== 'POST') return next();
    const delivery = deliveryOf(req);
    req.rawBody = delivery.rawBody;
    // Routes match case-insensitively, so the mount path must too (`/V1/Orders/Webhook` is the orders endpoint).
    req.webhook =
      req.baseUrl.toLowerCase() === WEBHOOK_PATHS.orders
        ? { delivery, resellerStore: await webhooks.verifyResellerStore(delivery) }
        : { delivery, sourceStores: await webhooks.verifySourceStores(delivery) };
    if (!req.is(['application/json', 'application/*+json'])) throw new AppError('unsupported_media_type');
    try {
      req.body = JSON.parse(delivery.rawBody.toString('utf8'));
    } catch {
      throw new AppError('validation_failed', { message: 'The webhook body is not valid JSON.', param: 'body' });
    }
    // The order is kept with its jobs as jsonb, which cannot store NUL or lone surrogates.
    const unstorablePath = unstorableIn(req.body);
    if (unstorablePath !== null) throw unstorable(unstorablePath || 'body');
    next();
  };
  return [rawBody, verify];
}
