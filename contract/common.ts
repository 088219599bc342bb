import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { PLATFORMS } from './enums.ts';
import { ERROR_CODES, ERROR_STATUS, type ErrorCode } from './errors.ts';
import { ID_PREFIXES, idPattern, type IdKind } from './ids.ts';

export const c = initContract();

/**
 * How a route is authenticated. `bearer` takes an access token or an API key; `access_token` only
 * an access token (a signed-in user).
 */
export type RouteAuth = 'bearer' | 'access_token' | 'none' | 'webhook' | 'refresh_cookie';

/**
 * Who signs a webhook route's deliveries, and so whose webhook secrets verify them: the reseller
 * store of the shop domain, the source stores of the shop domain, or the one source store the
 * path names (`source_store_id`).
 */
export type WebhookSender = 'reseller_store' | 'source_stores' | 'source_store';

/**
 * A route's metadata: everything that runs before its handler besides schema validation follows
 * from it (src/http/pipeline.ts), and the OpenAPI generator reads `auth` (contract/openapi.ts).
 */
export interface RouteMetadata {
  auth: RouteAuth;
  /** For `auth: 'webhook'`: the body is verified over its raw bytes against this sender's secret. */
  signedBy?: WebhookSender;
  /** Requests per minute per client IP are limited (`AUTH_RATE_LIMIT_PER_MINUTE`). */
  rateLimited?: true;
}

export const auth = (kind: Exclude<RouteAuth, 'webhook'>, options: { rateLimited?: true } = {}) => ({ auth: kind, ...options }) satisfies RouteMetadata;

/** A webhook route: no bearer token, a signature by `sender` over the raw body instead. */
export const signedBy = (sender: WebhookSender) => ({ auth: 'webhook', signedBy: sender }) satisfies RouteMetadata;

export const RequestId = z.string().describe('Identifies this request in logs; also in the X-Request-Id header.');
export const Timestamp = z.string().datetime().describe('ISO-8601 UTC timestamp.');
export const NullableTimestamp = Timestamp.nullable();

const EARLIEST_INSTANT = Date.parse('0001-01-01T00:00:00Z');
const LATEST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * A time a list or a bulk action filters by: ISO-8601 (with `offset`, any UTC offset; else `Z`),
 * naming a real instant between the years 1 and 9999 in UTC. zod's `datetime` alone takes an offset
 * such as `+99:99` or the year 0, which no date (or PostgreSQL) can hold.
 */
export const FilterTimestamp = (options: { offset?: boolean } = {}) =>
  z
    .string()
    .datetime(options)
    .refine((value) => {
      const instant = Date.parse(value);
      return instant >= EARLIEST_INSTANT && instant <= LATEST_INSTANT;
    }, 'must be a real time between the years 1 and 9999 (UTC)');

/**
 * Attaches OpenAPI metadata to a schema: this is what `extendApi` of @anatine/zod-openapi (the
 * generator ts-rest uses) does; that package can't be a direct dependency (its openapi3-ts peer
 * range excludes v4). A `title` makes contract/openapi.ts lift the schema into components.
 */
export function openApi<T extends z.ZodTypeAny>(schema: T, meta: Record<string, unknown>): T {
  const annotated = schema as T & { metaOpenApi?: Record<string, unknown> };
  annotated.metaOpenApi = { ...annotated.metaOpenApi, ...meta };
  return schema;
}

const ERROR_NAMES: Record<number, string> = {
  400: 'ValidationError',
  401: 'AuthenticationError',
  404: 'NotFoundError',
  409: 'ConflictError',
  413: 'PayloadTooLargeError',
  415: 'UnsupportedMediaTypeError',
  429: 'RateLimitedError',
  500: 'InternalError',
  503: 'UnavailableError',
};

const ERROR_EXAMPLES: Record<number, { code: ErrorCode; message: string; param?: string; details?: Record<string, unknown> }> = {
  400: { code: 'validation_failed', message: 'name: String must contain at least 1 character(s)', param: 'name' },
  401: { code: 'unauthorized', message: 'The access token is not valid or has expired.' },
  404: { code: 'not_found', message: 'No such resource.' },
  409: { code: 'conflict', message: 'Another active reseller store uses this shop domain.', param: 'shopDomain', details: { reason: 'shop_domain_taken' } },
  413: { code: 'payload_too_large', message: 'The request body is larger than 1 MiB.' },
  415: { code: 'unsupported_media_type', message: 'Request bodies must be JSON (Content-Type: application/json).' },
  429: { code: 'rate_limited', message: 'Too many requests; retry after the time in the Retry-After header.' },
  500: { code: 'internal_error', message: 'Something went wrong on our side.' },
  503: { code: 'unavailable', message: 'The service is temporarily unavailable; retry shortly.' },
};

const errorSchemas = new Map<number, z.ZodTypeAny>();

/** The error envelope for one HTTP status, its `code` limited to the codes of that status. */
export function errorResponse(status: keyof typeof ERROR_NAMES & number) {
  let schema = errorSchemas.get(status);
  if (!schema) {
    const codes = ERROR_CODES.filter((code) => ERROR_STATUS[code] === status) as [ErrorCode, ...ErrorCode[]];
    schema = openApi(
      z.object({
        error: z.object({
          code: z.enum(codes),
          message: z.string().describe('Human-readable; may change. Branch on `code`.'),
          param: z.string().optional().describe('The request field the error is about, when there is one.'),
          details: z.record(z.string(), z.any()).optional().describe('Extra facts, e.g. `reason` of a conflict.'),
        }),
        request_id: RequestId,
      }),
      {
        title: ERROR_NAMES[status],
        description: `Error envelope of HTTP ${status}; codes: ${codes.join(', ')}.`,
        example: { error: ERROR_EXAMPLES[status], request_id: 'req_5d3cc519db9d49029ca12ef17bf12787' },
      },
    );
    errorSchemas.set(status, schema);
  }
  return schema;
}

/** Error responses of the given statuses, for a route's `responses`. */
export const errors = <const S extends (keyof typeof ERROR_NAMES & number)[]>(...statuses: S) =>
  Object.fromEntries(statuses.map((status) => [status, errorResponse(status)])) as { [K in S[number]]: z.ZodTypeAny };

/** Error responses of every route that takes a JSON body. */
export const bodyErrors = errors(413, 415);

/**
 * Error responses any route can answer before its own rules apply: 400 for a path or query the
 * service refuses (a NUL, malformed percent-encoding) or a body that does not decode, 413 and 415
 * for a body sent where none is expected (src/http/pipeline.ts reads a body on every route).
 */
export const requestErrors = errors(400, 413, 415, 500);

/** Error responses shared by every authenticated route. */
export const authErrors = { ...requestErrors, ...errors(401, 503) };

export const NameSchema = z.string().trim().min(1).max(200);

export const ShopDomainSchema = z
  .string()
  .trim()
  .toLowerCase()
  .max(255)
  .regex(
    /^(?=.{1,255}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/,
    'must be a hostname such as my-shop.example.com',
  )
  .describe('Hostname of the store on its platform (stored lower-cased).');

export const PlatformSchema = z.enum(PLATFORMS);

/**
 * Cursor paging shared by every list endpoint: newest first, the cursors the ids of the list's
 * items (of `kind`). A cursor of another shape was never issued by the list: 400, not a page (an
 * empty one reads as the end, one from the start as new items). A well-formed id of an item since
 * gone still pages from where it was. A parameter the list does not take is 400 `validation_failed`
 * naming it.
 */
export const pageQuery = (kind: IdKind) => {
  const example = `${ID_PREFIXES[kind]}_0192f3a1c5e27b4d9a6f0c3e8b1d2a47`;
  const cursor = z
    .string()
    .regex(idPattern(kind), `must be the id of an item of this list (${ID_PREFIXES[kind]}_ and 32 hex digits)`);
  // Strict, as bodies are: a misspelt filter (`stauts=dead`) is 400 naming it, not a list of everything.
  return z.object({
    limit: z.coerce.number().int().min(1).max(100).default(20).describe('Page size, 1 to 100.'),
    starting_after: cursor.optional().describe(`Return the page after this item (older items): the \`id\` of an item of this list, e.g. \`${example}\`. Any other value is 400 \`validation_failed\`.`),
    ending_before: cursor.optional().describe(`Return the page before this item (newer items): the \`id\` of an item of this list. Any other value is 400 \`validation_failed\`.`),
  }).strict();
};

export function listOf<T extends z.ZodTypeAny>(item: T, title: string) {
  return openApi(z.object({
    object: z.literal('list'),
    data: z.array(item),
    has_more: z.boolean(),
    url: z.string().describe('Path of this list endpoint.'),
    request_id: RequestId,
  }), { title });
}

export const IdParam = z.object({ id: z.string().min(1).max(64) });
