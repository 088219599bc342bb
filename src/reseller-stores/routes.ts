import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { principalOf } from '../auth/principal.ts';
import { listBody } from '../http/list.ts';
import { withRequestId } from '../http/request-id.ts';
import { iso, isoOrNull } from '../shared/time.ts';
import type { ResellerStore } from './entity.ts';
import type { ResellerStoreService } from './service.ts';

/** Only these fields ever leave the service: credentials stay encrypted in the database. */
function presentResellerStore(store: ResellerStore) {
  return {
    id: store.id,
    ownerId: store.ownerId,
    name: store.name,
    platform: store.platform,
    shopDomain: store.shopDomain,
    createdAt: iso(store.createdAt),
    deletedAt: isoOrNull(store.deletedAt),
  };
}

export function resellerStoreRoutes(stores: ResellerStoreService) {
  const s = initServer();
  return s.router(contract.resellerStores, {
    create: async ({ body, req }) => ({
      status: 201,
      body: withRequestId(req, presentResellerStore(await stores.create(principalOf(req), body))),
    }),
    list: async ({ query, req }) => ({
      status: 200,
      body: listBody(req, await stores.list(principalOf(req), query), presentResellerStore),
    }),
    get: async ({ params, req }) => ({
      status: 200,
      body: withRequestId(req, presentResellerStore(await stores.get(principalOf(req), params.id))),
    }),
    stats: async ({ params, req }) => {
      const stats = await stores.stats(principalOf(req), params.id);
      return {
        status: 200,
        body: withRequestId(req, {
          ...stats,
          lastOrderAt: isoOrNull(stats.lastOrderAt),
          lastReconciledAt: isoOrNull(stats.lastReconciledAt),
        }),
      };
    },
    update: async ({ params, body, req }) => ({
      status: 200,
      body: withRequestId(req, presentResellerStore(await stores.rename(principalOf(req), params.id, body.name))),
    }),
    remove: async ({ params, req }) => {
      await stores.remove(principalOf(req), params.id);
      return { status: 204, body: undefined };
    },
  });
}
