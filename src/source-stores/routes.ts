import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { principalOf } from '../auth/principal.ts';
import { listBody } from '../http/list.ts';
import { withRequestId } from '../http/request-id.ts';
import { iso, isoOrNull } from '../shared/time.ts';
import type { SourceStore } from './entity.ts';
import type { SourceStoreService } from './service.ts';

/** Only these fields ever leave the service: credentials stay encrypted in the database. */
function presentSourceStore(store: SourceStore) {
  return {
    id: store.id,
    resellerStoreId: store.resellerStoreId,
    name: store.name,
    platform: store.platform,
    shopDomain: store.shopDomain,
    vendorTag: store.vendorTag,
    pricingMode: store.pricingMode,
    pricingConfig: store.pricingConfig,
    createdAt: iso(store.createdAt),
    deletedAt: isoOrNull(store.deletedAt),
  };
}

export function sourceStoreRoutes(stores: SourceStoreService) {
  const s = initServer();
  return s.router(contract.sourceStores, {
    create: async ({ params, body, req }) => ({
      status: 201,
      body: withRequestId(req, presentSourceStore(await stores.create(principalOf(req), params.rst_id, body))),
    }),
    list: async ({ params, query, req }) => ({
      status: 200,
      body: listBody(req, await stores.list(principalOf(req), params.rst_id, query), presentSourceStore),
    }),
    get: async ({ params, req }) => ({
      status: 200,
      body: withRequestId(req, presentSourceStore(await stores.get(principalOf(req), params.rst_id, params.id))),
    }),
    update: async ({ params, body, req }) => ({
      status: 200,
      body: withRequestId(req, presentSourceStore(await stores.update(principalOf(req), params.rst_id, params.id, body))),
    }),
    remove: async ({ params, req }) => {
      await stores.remove(principalOf(req), params.rst_id, params.id);
      return { status: 204, body: undefined };
    },
  });
}
