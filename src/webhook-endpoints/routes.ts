import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { principalOf } from '../auth/principal.ts';
import { listBody } from '../http/list.ts';
import { withRequestId } from '../http/request-id.ts';
import { presentDelivery, presentEndpoint } from './present.ts';
import type { WebhookEndpointService } from './service.ts';

export function webhookEndpointRoutes(endpoints: WebhookEndpointService) {
  const s = initServer();
  const owner = (req: Parameters<typeof principalOf>[0]) => principalOf(req).userId;
  return s.router(contract.webhookEndpoints, {
    create: async ({ body, req }) => {
      const { endpoint, secret } = await endpoints.create(owner(req), body);
      return { status: 201, body: withRequestId(req, { ...presentEndpoint(endpoint), secret }) };
    },
    list: async ({ query, req }) => ({ status: 200, body: listBody(req, await endpoints.list(owner(req), query), presentEndpoint) }),
    get: async ({ params, req }) => ({ status: 200, body: withRequestId(req, presentEndpoint(await endpoints.get(owner(req), params.id))) }),
    update: async ({ params, body, req }) => ({
      status: 200,
      body: withRequestId(req, presentEndpoint(await endpoints.update(owner(req), params.id, body))),
    }),
    remove: async ({ params, req }) => {
      await endpoints.remove(owner(req), params.id);
      return { status: 204, body: undefined };
    },
    rotateSecret: async ({ params, req }) => {
      const { endpoint, secret } = await endpoints.rotateSecret(owner(req), params.id);
      return { status: 200, body: withRequestId(req, { ...presentEndpoint(endpoint), secret }) };
    },
    test: async ({ params, req }) => ({ status: 202, body: withRequestId(req, presentDelivery(await endpoints.test(owner(req), params.id))) }),
    listDeliveries: async ({ params, query, req }) => ({
      status: 200,
      body: listBody(req, await endpoints.listDeliveries(owner(req), params.id, query), presentDelivery),
    }),
    retryDelivery: async ({ params, req }) => ({
      status: 200,
      body: withRequestId(req, presentDelivery(await endpoints.retryDelivery(owner(req), params.id, params.delivery_id))),
    }),
  });
}
