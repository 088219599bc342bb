import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { principalOf } from '../auth/principal.ts';
import { listBody } from '../http/list.ts';
import { withRequestId } from '../http/request-id.ts';
import { presentEvent, type EventService } from './service.ts';

/**
 * The stored payload is the event exactly as delivered, built from the typed presenters when it was
 * written. It is answered as stored, not through today's schemas (src/app.ts turns response
 * validation off for these routes): an event kept from an earlier release lacks fields its resource
 * gained since, and is still the event its deliveries carried.
 */
export function eventRoutes(events: EventService) {
  const s = initServer();
  return s.router(contract.events, {
    list: async ({ query, req }) => ({
      status: 200,
      body: listBody(req, await events.list(principalOf(req).userId, query), presentEvent as never),
    }),
    get: async ({ params, req }) => ({
      status: 200,
      body: withRequestId(req, presentEvent(await events.get(principalOf(req).userId, params.id))) as never,
    }),
  });
}
