import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { ERROR_CODES } from './errors.ts';

export const c = initContract();

/** How a route is authenticated; read by the auth middleware and the OpenAPI generator. */
export type RouteAuth = 'bearer' | 'none' | 'webhook' | 'refresh_cookie';
export const auth = (kind: RouteAuth) => ({ auth: kind }) as const;

export const RequestId = z.string().describe('Identifies this request in logs; also in the X-Request-Id header.');
export const Timestamp = z.string().datetime().describe('ISO-8601 UTC timestamp.');
export const NullableTimestamp = Timestamp.nullable();

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.enum(ERROR_CODES),
      message: z.string(),
      param: z.string().optional().describe('The request field the error is about, when there is one.'),
      details: z.record(z.unknown()).optional(),
    }),
    request_id: RequestId,
  })
  .describe('Every error answers with this body.');

/** Error responses shared by every authenticated route. */
export const authErrors = {
  401: ErrorSchema,
  500: ErrorSchema,
  503: ErrorSchema,
} as const;

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

export const PlatformSchema = z.enum(['platform_a', 'platform_b', 'custom']);

/** Cursor paging shared by every list endpoint: newest first. */
export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('Page size, 1 to 100.'),
  starting_after: z.string().max(64).optional().describe('Return the page after this id (older items).'),
  ending_before: z.string().max(64).optional().describe('Return the page before this id (newer items).'),
});

export function listOf<T extends z.ZodTypeAny>(item: T) {
  return z.object({
    object: z.literal('list'),
    data: z.array(item),
    has_more: z.boolean(),
    url: z.string().describe('Path of this list endpoint.'),
    request_id: RequestId,
  });
}

export const IdParam = z.object({ id: z.string().min(1).max(64) });
