/** Small node:http helpers shared by the sandbox's platform and control routes. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import type { Reply } from './state.ts';

const MAX_BODY_BYTES = 1024 * 1024;

/** A request the sandbox answers with `reply` instead of carrying it out. */
export class Refusal extends Error {
  constructor(readonly reply: Reply) {
    super(`refused with ${reply.status}`);
  }
}

export const NOT_FOUND: Reply = { status: 404, body: { errors: 'Not Found' } };

export async function readText(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Refusal({ status: 413, body: { errors: 'Payload Too Large' } });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The JSON body, or undefined when there is none. */
export function jsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new Refusal({ status: 400, body: { errors: 'body is not valid JSON' } });
  }
}

/** Validates a body; a mismatch is refused as 422 `{"errors": {"path": ["message"]}}`. */
export function accept<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, body: unknown, status = 422): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const errors: Record<string, string[]> = {};
  for (const issue of result.error.issues) {
    const path = issue.path.join('.') || 'base';
    (errors[path] ??= []).push(issue.message);
  }
  throw new Refusal({ status, body: { errors } });
}

export function send(response: ServerResponse, reply: Reply): void {
  const headers: Record<string, string> = { ...reply.headers };
  if (reply.rawBody !== undefined) {
    headers['Content-Type'] = 'application/json';
    response.writeHead(reply.status, headers).end(reply.rawBody);
    return;
  }
  if (reply.body === undefined) {
    response.writeHead(reply.status, headers).end();
    return;
  }
  headers['Content-Type'] = 'application/json';
  response.writeHead(reply.status, headers).end(JSON.stringify(reply.body));
}

/** The single value of a header that may arrive repeated. */
export function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
