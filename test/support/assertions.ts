import { expect } from 'vitest';
import { ERROR_CODES } from '../../contract/errors.ts';
import type { ApiResponse } from './api.ts';

const ERROR_FIELDS = ['code', 'message', 'param', 'details'];

/** The error envelope of decisions.md, and nothing else: `{error: {code, message, param?, details?}, request_id}`. */
export function expectErrorEnvelope(body: unknown): void {
  expect(body, 'error body').toBeTypeOf('object');
  const envelope = body as { error: Record<string, unknown>; request_id: unknown };
  expect(Object.keys(envelope).sort()).toEqual(['error', 'request_id']);
  expect(envelope.request_id).toBeTypeOf('string');
  expect((envelope.request_id as string).length).toBeGreaterThan(0);
  for (const key of Object.keys(envelope.error)) expect(ERROR_FIELDS, `unexpected error field ${key}`).toContain(key);
  expect(ERROR_CODES, 'error code outside the closed set').toContain(envelope.error.code);
  expect(envelope.error.message).toBeTypeOf('string');
  if ('param' in envelope.error) expect(envelope.error.param).toBeTypeOf('string');
  if ('details' in envelope.error) expect(envelope.error.details).toBeTypeOf('object');
}

/** Asserts status, code (and `param` when given) and the exact envelope shape. */
export function expectError(response: ApiResponse, status: number, code: string, param?: string): void {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expectErrorEnvelope(response.body);
  expect(response.body.error.code).toBe(code);
  if (param !== undefined) expect(response.body.error.param).toBe(param);
  expect(response.headers.get('x-request-id')).toBe(response.body.request_id);
}

/** A body without its request id, for comparing two answers that must be indistinguishable. */
export function withoutRequestId(body: Record<string, unknown>): Record<string, unknown> {
  const { request_id: _ignored, ...rest } = body;
  return rest;
}

/** Walks pages of a list endpoint with `starting_after` and returns every id, newest first. */
export async function allIds(
  list: (query: string) => Promise<ApiResponse>,
  limit = 100,
): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const response = await list(`limit=${limit}${cursor ? `&starting_after=${cursor}` : ''}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    ids.push(...response.body.data.map((item: { id: string }) => item.id));
    if (!response.body.has_more) return ids;
    cursor = ids.at(-1);
  }
}

/** A response timestamp is an ISO-8601 UTC string. */
export const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
