import type { Request } from 'express';
import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { withRequestId } from '../http/request-id.ts';
import { AppError } from '../shared/errors.ts';
import type { WebhookService } from './service.ts';

type Sender = 'resellerStore' | 'sourceStores';

/** The delivery and the sender the intake middleware verified for this endpoint; without one, nothing is trusted. */
function verified<K extends Sender>(req: { webhook?: Request['webhook'] }, sender: K) {
  const verifiedSender = req.webhook?.[sender];
  if (!req.webhook || !verifiedSender) throw new AppError('invalid_signature');
  return { delivery: req.webhook.delivery, sender: verifiedSender as NonNullable<NonNullable<Request['webhook']>[K]> };
}

export function webhookRoutes(webhooks: WebhookService) {
  const s = initServer();
  return s.router(contract.webhooks, {
    orders: async ({ body, req }) => {
      const { delivery, sender } = verified(req, 'resellerStore');
      const answer = await webhooks.receiveOrder(sender, body, delivery);
      return { status: 200, body: withRequestId(req, { received: true as const, ...answer }) };
    },
    fulfillments: async ({ body, req }) => {
      const { delivery, sender } = verified(req, 'sourceStores');
      const answer = await webhooks.receiveFulfillment(sender, body, delivery);
      return { status: 200, body: withRequestId(req, { received: true as const, ...answer }) };
    },
    fulfillmentsForStore: async ({ body, req }) => {
      const { delivery, sender } = verified(req, 'sourceStores');
      const answer = await webhooks.receiveFulfillment(sender, body, delivery);
      return { status: 200, body: withRequestId(req, { received: true as const, ...answer }) };
    },
  });
}
