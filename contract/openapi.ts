import { isDeepStrictEqual } from 'node:util';
import type { AppRoute } from '@ts-rest/core';
import { generateOpenApi } from '@ts-rest/open-api';
import type { OpenAPIObject, OperationObject, SchemaObject } from 'openapi3-ts/oas30';
import type { RouteMetadata } from './common.ts';
import { EXAMPLES } from './examples.ts';
import { contract } from './index.ts';

const TAGS: { name: string; prefix: string; description: string }[] = [
  { name: 'Auth', prefix: '/v1/auth', description: 'Registration, login and sessions (JWT access tokens, rotating refresh cookie).' },
  { name: 'API keys', prefix: '/v1/api_keys', description: 'Keys for programmatic access (`sk_live_…`, `sk_test_…`), acting as their owner.' },
  { name: 'Source stores', prefix: '/v1/reseller_stores/{rst_id}/source_stores', description: 'Suppliers of a reseller store, matched to order lines by vendor tag.' },
  { name: 'Reseller stores', prefix: '/v1/reseller_stores', description: 'Storefronts where customers order.' },
  { name: 'Sync jobs', prefix: '/v1/sync_jobs', description: 'One supplier\'s part of a reseller order, placed on the supplier\'s store.' },
  { name: 'Audit log', prefix: '/v1/audit_log', description: 'Read-only record of what happened in a reseller store workspace.' },
  { name: 'Webhooks', prefix: '/v1/orders/webhook', description: 'Inbound platform webhooks, verified by HMAC-SHA256 instead of bearer auth.' },
  { name: 'Webhooks', prefix: '/v1/fulfillments/webhook', description: '' },
  { name: 'Events', prefix: '/v1/events', description: 'What happened to sync jobs, fulfillments and orders, as delivered to webhook endpoints.' },
  {
    name: 'Webhook endpoints',
    prefix: '/v1/webhook_endpoints',
    description:
      'Outbound webhooks for integrators: events POSTed to your URL, signed as Standard Webhooks 1.0 says (`webhook-id`, `webhook-timestamp`, `webhook-signature`), retried on a schedule over about a day.',
  },
  { name: 'Operations', prefix: '/', description: 'Health and readiness probes.' },
];

const tagOf = (path: string) => TAGS.find(({ prefix }) => path.replace(/:([a-z_]+)/g, '{$1}').startsWith(prefix))!.name;

function securityOf(route: AppRoute): OperationObject['security'] {
  const kind = (route.metadata as RouteMetadata | undefined)?.auth ?? 'bearer';
  if (kind === 'bearer') return [{ bearerAuth: [] }, { apiKeyAuth: [] }];
  if (kind === 'access_token') return [{ bearerAuth: [] }];
  if (kind === 'refresh_cookie') return [{ refreshCookie: [] }];
  return [];
}

/** `auth.register` → `authRegister`: identifiers SDK generators turn into method names as they are. */
const camelCase = (operationId: string) => operationId.replace(/\.(\w)/g, (_, letter: string) => letter.toUpperCase());

function withExamples(operation: OperationObject): OperationObject {
  const examples = EXAMPLES[operation.operationId!];
  if (!examples) return operation;
  const requestMedia = operation.requestBody && 'content' in operation.requestBody ? operation.requestBody.content['application/json'] : undefined;
  if (requestMedia && examples.request !== undefined) requestMedia.example = examples.request;
  if (requestMedia && examples.requests !== undefined) requestMedia.examples = examples.requests;
  for (const [status, example] of Object.entries(examples.responses)) {
    const response = operation.responses[status];
    const media = response && 'content' in response ? response.content?.['application/json'] : undefined;
    if (media) media.example = example;
  }
  return operation;
}

/** A route with a body schema needs the body: generated SDKs then make it a required argument. */
function withRequiredBody(operation: OperationObject): OperationObject {
  const body = operation.requestBody;
  if (!body || !('content' in body)) return operation;
  const schema = body.content['application/json']?.schema;
  const empty = !schema || Object.keys(schema).length === 0;
  return empty ? operation : { ...operation, requestBody: { ...body, required: true } };
}

function mapOperation(operation: OperationObject, route: AppRoute): OperationObject {
  // (ts-rest types the mapper with its own copy of openapi3-ts; the shapes are the same.)
  const operationId = camelCase(operation.operationId!);
  return withExamples(withRequiredBody({ ...operation, operationId, tags: [tagOf(route.path)], security: securityOf(route) }));
}

/**
 * Without a `mapping`, a discriminator's value must be the schema's name; ours are the literal
 * values (`percentage`, `multiply`), so each one is mapped to its component.
 */
function mapDiscriminators(schemas: Record<string, SchemaObject>): void {
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    const schema = node as SchemaObject;
    if (schema.discriminator && schema.oneOf) {
      const property = schema.discriminator.propertyName;
      const mapping: Record<string, string> = {};
      for (const option of schema.oneOf) {
        const ref = (option as { $ref?: string }).$ref;
        const target = ref ? schemas[ref.split('/').pop()!] : undefined;
        const values = (target?.properties?.[property] as SchemaObject | undefined)?.enum;
        if (ref && values) for (const value of values) mapping[String(value)] = ref;
      }
      schema.discriminator = { ...schema.discriminator, mapping };
    }
    Object.values(node).forEach(visit);
  };
  visit(schemas);
}

/**
 * The generator emits some JSON-Schema-2020 forms and inline copies of every schema; this makes
 * the document valid OpenAPI 3.0 and lifts every titled schema into components.schemas.
 */
function normalise(document: OpenAPIObject): OpenAPIObject {
  const components: Record<string, SchemaObject> = {};
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (!node || typeof node !== 'object') return node;
    const schema = Object.fromEntries(Object.entries(node).map(([key, value]) => [key, visit(value)])) as Record<string, unknown>;
    for (const [bound, exclusive] of [['minimum', 'exclusiveMinimum'], ['maximum', 'exclusiveMaximum']] as const) {
      if (typeof schema[exclusive] === 'number') {
        schema[bound] = schema[exclusive];
        schema[exclusive] = true;
      }
    }
    if (schema.nullable === true && schema.type === undefined && !schema.oneOf && !schema.anyOf && !schema.allOf) delete schema.nullable;
    if (typeof schema.title === 'string' && ('type' in schema || 'oneOf' in schema || 'anyOf' in schema)) {
      const name = schema.title;
      const { title: _title, ...body } = schema;
      if (components[name] && !isDeepStrictEqual(components[name], body)) throw new Error(`two different schemas are titled ${name}`);
      components[name] = body as SchemaObject;
      return { $ref: `#/components/schemas/${name}` };
    }
    return schema;
  };
  const paths = visit(document.paths) as OpenAPIObject['paths'];
  // ts-rest already lifts top-level titled schemas into components; normalise those too.
  for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) {
    const { title: _title, ...body } = visit({ ...schema, title: undefined }) as Record<string, unknown>;
    components[name] ??= body as SchemaObject;
  }
  mapDiscriminators(components);
  return {
    ...document,
    paths,
    components: { ...document.components, schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))) },
  };
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
          'Routes orders from a reseller storefront to supplier stores (source stores) and syncs fulfillment and tracking back. All bodies are JSON; every response carries `request_id` in its body and the `X-Request-Id` header (a caller\'s own printable `X-Request-Id` of up to 128 characters is kept). Errors are `{error: {code, message, param?, details?}, request_id}`; lists are `{object: "list", data, has_more, url, request_id}`, newest first, paged with `limit`, `starting_after` and `ending_before`.',
        license: { name: 'Proprietary', url: 'https://example.com/license' },
        contact: { name: 'Order routing team', email: 'api@example.com' },
      },
      servers: [{ url: 'http://localhost:3000', description: 'Local development (npm start)' }],
      tags: TAGS.filter(({ description }) => description).map(({ name, description }) => ({ name, description })),
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
    { setOperationId: 'concatenated-path', operationMapper: mapOperation as never },
  );
  return normalise(document as OpenAPIObject);
}
