import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { principalOf } from '../auth/principal.ts';
import { withRequestId } from '../http/request-id.ts';
import { listBody } from '../http/list.ts';
import { iso, isoOrNull } from '../shared/time.ts';
import type { ApiKey } from './entity.ts';
import type { ApiKeyService } from './service.ts';

function presentApiKey(key: ApiKey) {
  return {
    id: key.id,
    ownerId: key.ownerId,
    prefix: key.prefix as 'sk_live_' | 'sk_test_',
    environment: key.environment,
    name: key.name,
    lastUsedAt: isoOrNull(key.lastUsedAt),
    createdAt: iso(key.createdAt),
    revokedAt: isoOrNull(key.revokedAt),
  };
}

export function apiKeyRoutes(apiKeys: ApiKeyService) {
  const s = initServer();
  return s.router(contract.apiKeys, {
    create: async ({ body, req }) => {
      const { key, rawKey } = await apiKeys.create(principalOf(req).userId, body.name, body.environment);
      return { status: 201, body: withRequestId(req, { ...presentApiKey(key), raw_key: rawKey }) };
    },
    list: async ({ query, req }) => ({
      status: 200,
      body: listBody(req, await apiKeys.list(principalOf(req).userId, query), presentApiKey),
    }),
    get: async ({ params, req }) => ({
      status: 200,
      body: withRequestId(req, presentApiKey(await apiKeys.get(principalOf(req).userId, params.id))),
    }),
    revoke: async ({ params, req }) => {
      await apiKeys.revoke(principalOf(req).userId, params.id);
      return { status: 204, body: undefined };
    },
  });
}
