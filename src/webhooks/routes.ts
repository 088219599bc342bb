import type { Request } from 'express';
import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { withRequestId } from '../http/request-id.ts';
import { AppError } from '../shared/errors.ts';
import type { WebhookService } from './service.ts';

/** The sender verified by the intake middleware; its absence would be a wiring bug. */
function verified(req: { webhook?: Request['webhook'] }) {
  if (!req.webhook) throw new AppError('invalid_signature');
  return req.webhook;
}

export function webhookRoutes(webhooks: WebhookService) {
  const s = initServer();
  return s.router(contract.webhooks, {
    orders: async ({ body, req }) => {
      const { delivery, resellerStore } = verified(req);
      const syncJobIds = await webhooks.receiveOrder(resellerStore!, body, delivery);
      return { status: 200, body: withRequestId(req, { received: true as const, syncJobIds }) };
    },
    fulfillments: async ({ body, req }) => {
      const { delivery, sourceStores } = verified(req);
      const syncJobIds = await webhooks.receiveFulfillment(sourceStores!, body, delivery);
      return { status: 200, body: withRequestId(req, { received: true as const, syncJobIds }) };
    },
  });
}
