import { z } from 'zod';
import { auth, authErrors, c, ErrorSchema, IdParam, listOf, NameSchema, NullableTimestamp, PageQuery, RequestId, Timestamp } from './common.ts';

const ApiKeyFields = z.object({
  id: z.string(),
  ownerId: z.string(),
  prefix: z.enum(['sk_live_', 'sk_test_']),
  environment: z.enum(['live', 'test']),
  name: z.string(),
  lastUsedAt: NullableTimestamp,
  createdAt: Timestamp,
  revokedAt: NullableTimestamp,
});

const ApiKey = ApiKeyFields.extend({ request_id: RequestId });
const CreatedApiKey = ApiKey.extend({
  raw_key: z.string().describe('The key itself. Shown only in this response; store it now.'),
});

export const apiKeysContract = c.router(
  {
    create: {
      method: 'POST',
      path: '/v1/api_keys',
      body: z.object({
        name: NameSchema,
        environment: z.enum(['live', 'test']).describe('`live` keys start with sk_live_, `test` keys with sk_test_.'),
      }),
      responses: { 201: CreatedApiKey, 400: ErrorSchema },
      summary: 'Create an API key',
      description: 'The raw key is returned once. Both environments act as their owner.',
    },
    list: {
      method: 'GET',
      path: '/v1/api_keys',
      query: PageQuery,
      responses: { 200: listOf(ApiKeyFields), 400: ErrorSchema },
      summary: 'List API keys',
      description: 'Keys of the current user, newest first, revoked ones included. Never the raw key.',
    },
    get: {
      method: 'GET',
      path: '/v1/api_keys/:id',
      pathParams: IdParam,
      responses: { 200: ApiKey, 404: ErrorSchema },
      summary: 'Get an API key',
      description: 'One key of the current user (never the raw key).',
    },
    revoke: {
      method: 'DELETE',
      path: '/v1/api_keys/:id',
      pathParams: IdParam,
      body: c.noBody(),
      responses: { 204: c.noBody(), 404: ErrorSchema },
      summary: 'Revoke an API key',
      description: 'Every later request with the key answers 401.',
    },
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
