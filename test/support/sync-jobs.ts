/** Helpers for the sync job suites: stores wired to the sandbox, jobs, and what to observe. */
import { expect } from 'vitest';
import type { OrderLineInput, RequestRecord, Sandbox } from '../sandbox/server.ts';
import type { ApiClient } from './api.ts';
import { queryRows } from './database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './factories.ts';
import { waitFor } from './wait.ts';

export interface Shop {
  user: TestUser;
  reseller: { id: string; shopDomain: string; platform: string };
}

export interface Supplier {
  id: string;
  shopDomain: string;
  vendorTag: string;
  platform: string;
}

/** A user with one reseller store (platform_a unless overridden). */
export async function openShop(api: ApiClient, resellerOverrides: Record<string, unknown> = {}, user?: TestUser): Promise<Shop> {
  const owner = user ?? (await registerUser(api));
  const reseller = await createResellerStore(api, owner.token, resellerOverrides);
  return { user: owner, reseller };
}

export function addSupplier(api: ApiClient, shop: Shop, overrides: Record<string, unknown> = {}): Promise<Supplier> {
  return createSourceStore(api, shop.user.token, shop.reseller.id, overrides);
}

let nextOrderId = 700_000 + Math.floor(Math.random() * 100_000) * 10;

/** A fresh numeric order id, as the reseller platform would assign. */
export const newOrderId = (): string => String(nextOrderId++);

/** Puts an order on the reseller store in the sandbox, so a manual job can read it; returns its id. */
export function seedResellerOrder(sandbox: Sandbox, shop: Shop, lines: OrderLineInput[], id = newOrderId()): string {
  const platform = shop.reseller.platform as Parameters<Sandbox['seedOrder']>[1];
  const orderId = platform === 'custom' ? id : Number(id);
  sandbox.seedOrder(shop.reseller.shopDomain, platform, sandbox.buildOrderPayload(platform, { id: orderId, lines }));
  return id;
}

/** One line from `vendor`: 2 × 12.50 unless told otherwise. */
export const lineOf = (vendor: string, overrides: Partial<OrderLineInput> = {}): OrderLineInput => ({
  sku: `SKU-${vendor.replace(/\W+/g, '')}`,
  title: `Item from ${vendor}`,
  vendor,
  quantity: 2,
  price: '12.50',
  ...overrides,
});

export async function createJob(api: ApiClient, token: string, sourceStoreId: string, externalOrderId: string) {
  const response = await api.post('/v1/sync_jobs', { token, body: { source_store_id: sourceStoreId, external_order_id: externalOrderId } });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body;
}

export async function getJob(api: ApiClient, token: string, id: string) {
  const response = await api.get(`/v1/sync_jobs/${id}`, { token });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

/** Polls the job until `done` holds for it. */
export async function waitForJob(api: ApiClient, token: string, id: string, done: (job: any) => boolean, timeoutMs = 15_000, label = 'job'): Promise<any> {
  let last: any;
  try {
    return await waitFor(async () => {
      last = await getJob(api, token, id);
      return done(last) ? last : null;
    }, timeoutMs, `${label} ${id}`);
  } catch (error) {
    throw new Error(`${(error as Error).message}; last seen: ${JSON.stringify(last)}`);
  }
}

/** Waits for completed or dead, whichever comes first. */
export const settled = (api: ApiClient, token: string, id: string, timeoutMs?: number) =>
  waitForJob(api, token, id, (job) => job.status === 'completed' || job.status === 'dead', timeoutMs, 'settled job');

/** The audit entries of one resource, oldest first. */
export async function auditOf(api: ApiClient, token: string, resourceId: string): Promise<any[]> {
  const response = await api.get(`/v1/audit_log?resource_id=${resourceId}&limit=100`, { token });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return [...response.body.data].reverse();
}

/** The order-creating POSTs a source store received, whatever their outcome. */
export function orderPosts(sandbox: Sandbox, shopDomain: string): RequestRecord[] {
  return sandbox.requestsFor(shopDomain).filter((request) => request.method === 'POST' && /\/orders(\.json)?$/.test(request.path));
}

/** The sync_jobs row as stored, including what the API does not show. */
export async function jobRow(databaseUrl: string, id: string) {
  const [row] = await queryRows<{ status: string; attempts: number; queue_message_id: string | null }>(
    databaseUrl,
    'select status, attempts, queue_message_id from sync_jobs where id = $1',
    [id],
  );
  return row!;
}

/** A pg-boss message as stored (state: created, retry, active, completed, failed, cancelled). */
export async function queueMessage(databaseUrl: string, id: string) {
  const [row] = await queryRows<{ state: string; name: string; data: unknown; retry_count: number; heartbeat_stale: boolean | null }>(
    databaseUrl,
    `select state, name, data, retry_count,
            (heartbeat_on + heartbeat_seconds * interval '1 second') < now() as heartbeat_stale
       from pgboss.job where id = $1`,
    [id],
  );
  return row;
}

/** Every queue message that names the job, oldest first. */
export function messagesOfJob(databaseUrl: string, jobId: string) {
  return queryRows<{ id: string; state: string }>(
    databaseUrl,
    `select id, state from pgboss.job where name = 'sync-job.process' and data->>'syncJobId' = $1 order by created_on`,
    [jobId],
  );
}

/** Log lines (pino JSON) with this message. */
export function logLines(logs: string[], msg: string): Record<string, unknown>[] {
  return logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === msg);
}
