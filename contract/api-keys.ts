import { z } from 'zod';
import { API_KEY_ENVIRONMENTS } from './enums.ts';
import { auth, authErrors, bodyErrors, c, errorResponse, IdParam, listOf, openApi, NameSchema, NullableTimestamp, pageQuery, RequestId, Timestamp } from './common.ts';

const ApiKeyFields = openApi(z.object({
  id: z.string(),
  ownerId: z.string(),
  prefix: z.enum(['sk_live_', 'sk_test_']),
  environment: z.enum(API_KEY_ENVIRONMENTS),
  name: z.string(),
  lastUsedAt: NullableTimestamp,
  createdAt: Timestamp,
  revokedAt: NullableTimestamp,
}), { title: 'ApiKeySummary' });

const ApiKey = openApi(ApiKeyFields.extend({ request_id: RequestId }), { title: 'ApiKey' });
const CreatedApiKey = openApi(
  ApiKey.extend({ raw_key: z.string().describe('The key itself. Shown only in this response; store it now.') }),
  { title: 'CreatedApiKey' },
);

export const apiKeysContract = c.router(
  {
    create: {
      method: 'POST',
      path: '/v1/api_keys',
      body: z.object({
        name: NameSchema,
        environment: z.enum(API_KEY_ENVIRONMENTS).describe('`live` keys start with sk_live_, `test` keys with sk_test_.'),
      }).strict(),
      responses: { 201: CreatedApiKey, 400: errorResponse(400), ...bodyErrors },
      summary: 'Create an API key',
      description:
        'The raw key is returned once. Both environments act as their owner. Needs a signed-in user\'s access token: an API key gets 401 `unauthorized` (`details.reason` `access_token_required`), so a leaked key cannot create its own successor.',
      metadata: auth('access_token'),
    },
    list: {
      method: 'GET',
      path: '/v1/api_keys',
      query: pageQuery('apiKey'),
      responses: { 200: listOf(ApiKeyFields, 'ApiKeyList'), 400: errorResponse(400) },
      summary: 'List API keys',
      description: 'Keys of the current user, newest first, revoked ones included. Never the raw key.',
    },
    get: {
      method: 'GET',
      path: '/v1/api_keys/:id',
      pathParams: IdParam,
      responses: { 200: ApiKey, 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Get an API key',
      description: 'One key of the current user (never the raw key).',
    },
    revoke: {
      method: 'DELETE',
      path: '/v1/api_keys/:id',
      pathParams: IdParam,
      body: c.noBody(),
      responses: { 204: c.noBody(), 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Revoke an API key',
      description:
        'Every later request with the key answers 401. Revoking a revoked key changes nothing and answers 204. Needs a signed-in user\'s access token: an API key gets 401 `unauthorized` (`details.reason` `access_token_required`).',
      metadata: auth('access_token'),
    },
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
