import type { Request } from 'express';
import type { WebhookSender } from '../../contract/common.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import type { Delivery, WebhookService } from './service.ts';

declare module 'express-serve-static-core' {
  interface Request {
    webhook?: { delivery: Delivery; resellerStore?: ResellerStore; sourceStores?: SourceStore[] };
  }
}

function pathParam(req: Request, name: string): string | undefined {
  const value: unknown = req.params[name];
  return typeof value === 'string' ? value : undefined;
}

function deliveryOf(req: Request, rawBody: Buffer): Delivery {
  return {
    client: req.ip,
    shopDomain: req.get('x-platform-shop-domain'),
    signature: req.get('x-platform-hmac-sha256'),
    topic: req.get('x-platform-topic'),
    webhookId: req.get('x-platform-webhook-id'),
    rawBody,
  };
}

/**
 * Verifies a signed route's delivery over the exact bytes received, against the secrets of the
 * sender its route names (`signedBy`), and keeps the verified sender for the handler; 401
 * invalid_signature, with nothing written, otherwise. Runs before the body is parsed, so only a
 * verified body is ever looked at (src/http/pipeline.ts).
 */
export function verifyWebhook(webhooks: WebhookService) {
  return async (req: Request, sender: WebhookSender, rawBody: Buffer): Promise<void> => {
    const delivery = deliveryOf(req, rawBody);
    if (sender === 'reseller_store') req.webhook = { delivery, resellerStore: await webhooks.verifyResellerStore(delivery) };
    else if (sender === 'source_store') req.webhook = { delivery, sourceStores: [await webhooks.verifySourceStore(pathParam(req, 'source_store_id'), delivery)] };
    else req.webhook = { delivery, sourceStores: await webhooks.verifySourceStores(delivery) };
  };
}
