import { existsSync, readFileSync } from 'node:fs';
import { isAppRoute, type AppRoute, type AppRouter } from '@ts-rest/core';
import { describe, expect, it } from 'vitest';
import { apiKeysContract } from '../contract/api-keys.ts';
import { auditLogContract } from '../contract/audit-log.ts';
import { authContract } from '../contract/auth.ts';
import { healthContract } from '../contract/health.ts';
import { buildOpenApiDocument } from '../contract/openapi.ts';
import { resellerStoresContract } from '../contract/reseller-stores.ts';
import { sourceStoresContract } from '../contract/source-stores.ts';

const OPENAPI_PATH = new URL('../openapi.json', import.meta.url);
const HINT = 'openapi.json is out of date with the contract: run `npm run openapi` and commit the result';

function routesOf(router: AppRouter): AppRoute[] {
  return Object.values(router).flatMap((entry) => (isAppRoute(entry) ? [entry] : routesOf(entry as AppRouter)));
}

/** The foundation's routes (sync jobs and webhooks are checked by their own tests). */
const FOUNDATION = [authContract, apiKeysContract, resellerStoresContract, sourceStoresContract, auditLogContract].flatMap(routesOf);

describe('openapi.json', () => {
  it('is committed and equals the document generated from the contract', () => {
    expect(existsSync(OPENAPI_PATH), 'openapi.json is missing: run `npm run openapi`').toBe(true);
    const committed: unknown = JSON.parse(readFileSync(OPENAPI_PATH, 'utf8'));
    // Through JSON, as the generator writes it (drops undefined values).
    const generated: unknown = JSON.parse(JSON.stringify(buildOpenApiDocument()));
    expect(committed, HINT).toEqual(generated);
  });

  it('documents every error status with the shared error envelope', () => {
    const document = buildOpenApiDocument();
    let errorResponses = 0;
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item as Record<string, { responses: Record<string, unknown> }>)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          if (Number(status) < 400) continue;
          if (path === '/readyz') continue; // readiness answers its own health body with 503
          // Error schemas are shared components (one per status, listing its codes).
          const reference = (response as { content?: Record<string, { schema?: { $ref?: string } }> }).content?.['application/json']
            ?.schema?.$ref;
          const schema = document.components?.schemas?.[reference?.split('/').pop() ?? ''] as { properties?: Record<string, unknown> } | undefined;
          expect(Object.keys(schema?.properties ?? {}).sort(), `${method.toUpperCase()} ${path} ${status}`).toEqual(['error', 'request_id']);
          errorResponses++;
        }
      }
    }
    expect(errorResponses).toBeGreaterThan(20);
  });
});

describe('the contract', () => {
  it.each(FOUNDATION.map((route) => [`${route.method} ${route.path}`, route] as const))(
    '%s declares the statuses its middleware can answer',
    (_name, route) => {
      const statuses = Object.keys(route.responses).map(Number);
      const takesInput = 'pathParams' in route || 'query' in route || ('body' in route && typeof route.body !== 'symbol');
      // Input that fails validation answers 400; every bearer route can answer 401.
      if (takesInput) expect(statuses).toContain(400);
      const kind = (route.metadata as { auth?: string } | undefined)?.auth;
      if (kind === 'bearer' || kind === 'access_token') expect(statuses).toContain(401);
      expect(statuses).toContain(500);
    },
  );

  it('declares health routes without authentication', () => {
    for (const route of routesOf(healthContract)) expect((route.metadata as { auth?: string }).auth).toBe('none');
  });
});
