import type { AppRoute } from '@ts-rest/core';
import { generateOpenApi } from '@ts-rest/open-api';
import type { OpenAPIObject, OperationObject } from 'openapi3-ts/oas30';
import type { RouteAuth } from './common.ts';
import { contract } from './index.ts';

const TAGS: [prefix: string, tag: string][] = [
  ['/v1/auth', 'Auth'],
  ['/v1/api_keys', 'API keys'],
  ['/v1/reseller_stores/{rst_id}/source_stores', 'Source stores'],
  ['/v1/reseller_stores', 'Reseller stores'],
  ['/v1/sync_jobs', 'Sync jobs'],
  ['/v1/audit_log', 'Audit log'],
  ['/v1/orders/webhook', 'Webhooks'],
  ['/v1/fulfillments/webhook', 'Webhooks'],
  ['/', 'Operations'],
];

function tagOf(path: string): string {
  const openApiPath = path.replace(/:([a-z_]+)/g, '{$1}');
  return TAGS.find(([prefix]) => openApiPath.startsWith(prefix))![1];
}

function securityOf(route: AppRoute): OperationObject['security'] {
  const kind = (route.metadata as { auth?: RouteAuth } | undefined)?.auth ?? 'bearer';
  if (kind === 'bearer') return [{ bearerAuth: [] }, { apiKeyAuth: [] }];
  if (kind === 'refresh_cookie') return [{ refreshCookie: [] }];
  return [];
}

/** The OpenAPI document for the contract; `npm run openapi` writes it to openapi.json. */
export function buildOpenApiDocument(): OpenAPIObject {
  const document = generateOpenApi(
    contract,
    {
      info: {
        title: 'Reseller Order-Routing Service',
        version: '1.0.0',
        description:
          'Routes orders from a reseller storefront to supplier stores (source stores) and syncs fulfillment and tracking back. All bodies are JSON; every response carries `request_id` and the `X-Request-Id` header.',
      },
      servers: [{ url: 'http://localhost:3000', description: 'Local development' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Access token from register, login or refresh.' },
          apiKeyAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key (`sk_live_…` or `sk_test_…`) sent as `Authorization: Bearer <key>`.',
          },
          refreshCookie: { type: 'apiKey', in: 'cookie', name: 'refresh_token', description: 'The refresh token cookie.' },
        },
      },
    },
    {
      setOperationId: 'concatenated-path',
      operationMapper: (operation, route) => ({
        ...operation,
        tags: [tagOf(route.path)],
        security: securityOf(route),
      }),
    },
  );
  return document as OpenAPIObject;
}
