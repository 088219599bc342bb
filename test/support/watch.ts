/** Helpers for the divergence-watch suites: a reseller with suppliers on every platform, routed and placed orders, passes. */
import { expect } from 'vitest';
import type { Platform } from '../../src/orders/types.ts';
import type { JsonObject, Sandbox } from '../sandbox/server.ts';
import { sendWebhook } from '../sandbox/server.ts';
import type { ApiClient } from './api.ts';
import { queryRows } from './database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './factories.ts';
import { waitFor } from './wait.ts';
import { FULFILLMENTS_PATH, ORDERS_PATH, uniqueSuffix } from './webhooks.ts';

export interface Target {
  api: ApiClient;
  url: string;
  databaseUrl: string;
}

export interface Store {
  id: string;
  shopDomain: string;
  platform: Platform;
  secret: string;
}

export interface Supplier extends Store {
  vendorTag: string;
}

export interface Tenant {
  target: Target;
  user: TestUser;
  reseller: Store;
  suppliers: Supplier[];
}

export interface Placed {
  externalOrderId: string;
  jobId: string;
  sourceOrderId: string;
  supplier: Supplier;
}

let nextOrderNumber = 900_000 + Math.floor(Math.random() * 90_000) * 10;

/** A user with a reseller store on `platform` posting its webhooks to the service, and one supplier per `supplierPlatforms`. */
export async function openTenant(sandbox: Sandbox, target: Target, platform: Platform, supplierPlatforms: Platform[], user?: TestUser): Promise<Tenant> {
  const owner = user ?? (await registerUser(target.api));
  const accessToken = `tok_watch_${uniqueSuffix()}${uniqueSuffix()}`;
  const secret = `whsec_watch_${uniqueSuffix()}`;
  const store = await createResellerStore(target.api, owner.token, { platform, accessToken, webhookSecret: secret });
  sandbox.registerStore(store.shopDomain, { accessToken });
  sandbox.subscribeWebhooks(store.shopDomain, { targetUrl: `${target.url}${ORDERS_PATH}`, secret });
  const suppliers: Supplier[] = [];
  for (const supplierPlatform of supplierPlatforms) {
    const supplierSecret = `whsec_sup_${uniqueSuffix()}`;
    const created = await createSourceStore(target.api, owner.token, store.id, { platform: supplierPlatform, vendorTag: `Watch ${uniqueSuffix()}`, webhookSecret: supplierSecret });
    suppliers.push({ id: created.id, shopDomain: created.shopDomain, platform: supplierPlatform, secret: supplierSecret, vendorTag: created.vendorTag });
  }
  return { target, user: owner, reseller: { id: store.id, shopDomain: store.shopDomain, platform, secret }, suppliers };
}

/** A customer orders one line of `supplier`'s; its webhook routes it and the job places it. Returns the placed job. */
export async function placeOrder(sandbox: Sandbox, tenant: Tenant, supplier: Supplier): Promise<Placed> {
  const n = nextOrderNumber++;
  const order = sandbox.buildOrderPayload(tenant.reseller.platform, {
    id: tenant.reseller.platform === 'custom' ? `wo-${n}` : n,
    lines: [{ sku: 'WCH-1', title: 'Watch', vendor: supplier.vendorTag, quantity: 1, price: '30.00' }],
    email: 'ada@example.com',
  });
  const fate = await sandbox.placeCustomerOrder(tenant.reseller.shopDomain, tenant.reseller.platform, order);
  expect(fate).toMatchObject({ delivered: { status: 200 } });
  const externalOrderId = String(order.id);
  return { externalOrderId, ...(await placedJobOf(tenant, externalOrderId)), supplier };
}

/** The job of a storefront order once it has placed it: its id and the supplier order's. */
export async function placedJobOf(tenant: Tenant, externalOrderId: string): Promise<{ jobId: string; sourceOrderId: string }> {
  const job = await waitFor(async () => {
    const [row] = await queryRows<{ id: string; source_order_id: string | null; status: string }>(
      tenant.target.databaseUrl,
      'select id, source_order_id, status from sync_jobs where reseller_store_id = $1 and external_order_id = $2',
      [tenant.reseller.id, externalOrderId],
    );
    return row?.status === 'completed' ? row : null;
  }, 20_000, `job of order ${externalOrderId} placed`);
  return { jobId: job.id, sourceOrderId: job.source_order_id! };
}

/** POST …/divergence_checks, then waits for the pass to finish; returns it. */
export async function check(tenant: Tenant): Promise<PassRow> {
  const id = await requestCheck(tenant);
  return finishedPass(tenant, id);
}

export async function requestCheck(tenant: Tenant): Promise<string> {
  const response = await tenant.target.api.post(`/v1/reseller_stores/${tenant.reseller.id}/divergence_checks`, { token: tenant.user.token });
  expect(response.status, JSON.stringify(response.body)).toBe(202);
  return response.body.divergenceCheckId;
}

export interface PassRow {
  id: string;
  status: string;
  orders_seen: number;
  repairs: number;
  platform_reads: number;
  error: string | null;
}

export function finishedPass(tenant: Tenant, id: string, timeoutMs = 30_000): Promise<PassRow> {
  return waitFor(async () => {
    const [row] = await queryRows<PassRow>(tenant.target.databaseUrl, 'select id, status, orders_seen, repairs, platform_reads, error from watch_passes where id = $1', [id]);
    return row && row.status !== 'running' ? row : null;
  }, timeoutMs, `divergence-watch pass ${id}`);
}

/** The store's open divergences as the API lists them. */
export async function divergencesOf(tenant: Tenant, query = ''): Promise<any[]> {
  const response = await tenant.target.api.get(`/v1/reseller_stores/${tenant.reseller.id}/divergences${query}`, { token: tenant.user.token });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data;
}

export function fulfillmentsOf(tenant: Tenant, jobId: string): Promise<{ id: string; dedupe_key: string; webhook_id: string | null; status: string }[]> {
  return queryRows(tenant.target.databaseUrl, 'select id, dedupe_key, webhook_id, status from fulfillments where sync_job_id = $1 order by id', [jobId]);
}

export function auditOf(tenant: Tenant, action: string): Promise<{ resource_id: string; metadata: any }[]> {
  return queryRows(tenant.target.databaseUrl, 'select resource_id, metadata from audit_entries where reseller_store_id = $1 and action = $2 order by id', [tenant.reseller.id, action]);
}

export async function eventsOf(tenant: Tenant, type: string): Promise<{ id: string; object: any }[]> {
  const rows = await queryRows<{ id: string; payload: string }>(tenant.target.databaseUrl, 'select id, payload from events where reseller_store_id = $1 and type = $2 order by id', [tenant.reseller.id, type]);
  return rows.map((row) => ({ id: row.id, object: JSON.parse(row.payload).data.object }));
}

/** Waits until the reseller's store has received `count` fulfillments (tracking pushed to the storefront order). */
export function pushedTracking(sandbox: Sandbox, tenant: Tenant, count: number) {
  return waitFor(async () => {
    const pushed = sandbox.fulfillmentsFor(tenant.reseller.shopDomain);
    return pushed.length >= count ? pushed : null;
  }, 20_000, `${count} fulfillments pushed to the reseller store`);
}

/** The supplier's platform delivers a fulfillments/create webhook (a late one, say). */
export function deliverFulfillment(tenant: Tenant, supplier: Supplier, payload: JsonObject, webhookId?: string) {
  return sendWebhook({
    targetUrl: `${tenant.target.url}${FULFILLMENTS_PATH}`,
    shopDomain: supplier.shopDomain,
    secret: supplier.secret,
    topic: 'fulfillments/create',
    payload,
    ...(webhookId && { webhookId }),
  });
}

export async function watermarkOf(target: Target, storeId: string): Promise<Date | null> {
  const [row] = await queryRows<{ watermark: Date }>(target.databaseUrl, 'select watermark from watch_watermarks where store_id = $1', [storeId]);
  return row ? new Date(row.watermark) : null;
}
