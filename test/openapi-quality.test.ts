import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { contract } from '../contract/index.ts';
import { EXTERNAL_ORDER_ID } from '../contract/limits.ts';

const run = promisify(execFile);
const SPEC_PATH = new URL('../openapi.json', import.meta.url).pathname;
const spec = JSON.parse(readFileSync(SPEC_PATH, 'utf8'));
const operations = Object.entries(spec.paths as Record<string, Record<string, any>>).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
);

describe('openapi.json quality', () => {
  it('validates with @apidevtools/swagger-parser', async () => {
    await expect(SwaggerParser.validate(structuredClone(spec))).resolves.toBeTruthy();
  });

  it('has zero errors under the @redocly/cli recommended rules', async () => {
    const cli = new URL('../node_modules/@redocly/cli/bin/cli.js', import.meta.url).pathname;
    const { stdout } = await run(process.execPath, [cli, 'lint', SPEC_PATH, '--extends=recommended', '--format=json'], {
      maxBuffer: 20 * 1024 * 1024,
    }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    const problems = JSON.parse(stdout.slice(stdout.indexOf('{'))).problems as { severity: string; ruleId: string; message: string }[];
    expect(problems.filter((problem) => problem.severity === 'error')).toEqual([]);
  }, 60_000);

  it('documents every operation with an operationId, summary, description and tag', () => {
    expect(operations.length).toBeGreaterThanOrEqual(28);
    const ids = new Set<string>();
    for (const { path, method, operation } of operations) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(operation.operationId, where).toMatch(/^[a-z][A-Za-z]+$/);
      expect(ids.has(operation.operationId), `${where} duplicates an operationId`).toBe(false);
      ids.add(operation.operationId);
      expect(operation.summary, where).toBeTruthy();
      expect(operation.description, where).toBeTruthy();
      expect(operation.tags, where).toHaveLength(1);
    }
  });

  it('uses a shared error schema, with its codes, for every error status', () => {
    const schemas = spec.components.schemas;
    for (const { path, method, operation } of operations) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
        if (Number(status) < 400 || path.endsWith('z')) continue;
        const ref: string = response.content['application/json'].schema.$ref;
        expect(ref, `${method} ${path} ${status}`).toMatch(/^#\/components\/schemas\/\w+Error$/);
        const codes: string[] = schemas[ref.split('/').pop()!].properties.error.properties.code.enum;
        expect(codes.length, ref).toBeGreaterThan(0);
      }
    }
    expect(schemas.ValidationError.properties.error.properties.code.enum).toEqual(['validation_failed', 'sync_job_not_retryable']);
    expect(schemas.AuthenticationError.properties.error.properties.code.enum).toEqual(['unauthorized', 'invalid_credentials', 'invalid_signature']);
  });

  it('declares bearer JWT and API key security, and webhooks as unauthenticated with their headers', () => {
    expect(spec.components.securitySchemes).toMatchObject({
      bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      apiKeyAuth: { type: 'http', scheme: 'bearer' },
    });
    expect(spec.paths['/v1/sync_jobs'].post.security).toEqual([{ bearerAuth: [] }, { apiKeyAuth: [] }]);
    for (const path of ['/v1/orders/webhook', '/v1/fulfillments/webhook']) {
      const operation = spec.paths[path].post;
      expect(operation.security).toEqual([]);
      const headers = operation.parameters.filter((p: { in: string }) => p.in === 'header').map((p: { name: string }) => p.name.toLowerCase());
      expect(headers).toEqual(expect.arrayContaining(['x-platform-hmac-sha256', 'x-platform-shop-domain', 'x-platform-topic', 'x-platform-webhook-id']));
    }
    expect(spec.paths['/v1/auth/register'].post.security).toEqual([]);
  });

  it('has request and response examples and a servers entry', () => {
    expect(spec.servers.length).toBeGreaterThan(0);
    for (const { path, method, operation } of operations) {
      const where = `${method.toUpperCase()} ${path}`;
      const body = operation.requestBody?.content?.['application/json'];
      if (body && body.schema && Object.keys(body.schema).length > 0 && !['/v1/auth/refresh', '/v1/auth/logout'].includes(path)) {
        // One `example`, or named `examples` (bodies that differ by platform), each with its value.
        const named = Object.values((body.examples ?? {}) as Record<string, { value?: unknown }>);
        expect(body.example ?? (named.length > 0 && named.every((example) => example.value !== undefined) ? named : undefined), `${where} request example`).toBeDefined();
      }
      const success = Object.entries(operation.responses as Record<string, any>).find(([status]) => status.startsWith('2'))!;
      const media = success[1].content?.['application/json'];
      if (media) expect(media.example, `${where} ${success[0]} example`).toBeDefined();
    }
    expect(spec.components.schemas.ValidationError.example.error.code).toBe('validation_failed');
  });

  it('maps every discriminator value to its schema and marks request bodies required', () => {
    expect(spec.components.schemas.PricingConfig.discriminator.mapping).toEqual({
      percentage: '#/components/schemas/PercentagePricing',
      field_rules: '#/components/schemas/FieldRulesPricing',
    });
    for (const { path, method, operation } of operations) {
      if (operation.requestBody) expect(operation.requestBody.required, `${method} ${path}`).toBe(true);
    }
  });

  it('documents a manual job for a custom storefront, whose order ids are strings, and says which ids are taken', () => {
    const create = spec.paths['/v1/sync_jobs'].post.requestBody.content['application/json'];
    const ids = Object.values((create.examples ?? {}) as Record<string, { value: { external_order_id: string } }>).map((example) => example.value.external_order_id);
    // A platform_a/platform_b order (digits) and a custom storefront's (a string such as SO-1001).
    expect(ids).toEqual(expect.arrayContaining([expect.stringMatching(/^\d+$/), expect.stringMatching(/[A-Za-z]/)]));
    for (const id of ids) expect(id).toMatch(EXTERNAL_ORDER_ID);
    for (const example of Object.values(create.examples as Record<string, { value: unknown }>)) expect(contract.syncJobs.create.body.safeParse(example.value).success).toBe(true);
    // Every place the id is shown says what it is on each platform, not "a numeric order id".
    const described = [
      create.schema.properties.external_order_id.description,
      spec.components.schemas.SyncJobSummary.properties.externalOrderId.description,
      spec.components.schemas.CancelledOrder.properties.externalOrderId.description,
      spec.components.schemas.UnmatchedOrder.properties.externalOrderId.description,
      spec.components.schemas.ReconciledOrder.properties.externalOrderId.description,
    ];
    for (const description of described) expect(description).toMatch(/custom storefront.*string/);
  });

  it('names path parameters as the interface does', () => {
    expect(Object.keys(spec.paths)).toEqual(
      expect.arrayContaining(['/v1/reseller_stores/{rst_id}/source_stores/{id}', '/v1/sync_jobs/{id}/retry', '/v1/api_keys/{id}']),
    );
  });
});
