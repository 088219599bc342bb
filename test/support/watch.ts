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

/** A reseller platform other than its supplier's, so each test covers a supplier on its own platform and a storefront on another. */
export const resellerPlatformFor = (supplier: Platform): Platform => (supplier === 'platform_a' ? 'custom' : 'platform_a');

/**
 * A customer orders one line of `supplier`'s (30.00) while the supplier's store has `faults`; once
 * the job is dead with no supplier order id, the faults are cleared. `idPrefix` starts a custom
 * storefront's order id.
 */
export async function orderWithJobDead(sandbox: Sandbox, tenant: Tenant, supplier: Supplier, faults: Record<string, unknown>, idPrefix = 'dj'): Promise<{ jobId: string; order: JsonObject }> {
  sandbox.setFaults(supplier.shopDomain, faults);
  const n = nextOrderNumber++;
  const order = sandbox.buildOrderPayload(tenant.reseller.platform, {
    id: tenant.reseller.platform === 'custom' ? `${idPrefix}-${n}` : n,
    lines: [{ sku: 'DEAD-1', title: 'Dead', vendor: supplier.vendorTag, quantity: 1, price: '30.00' }],
    email: 'ada@example.com',
  });
  expect(await sandbox.placeCustomerOrder(tenant.reseller.shopDomain, tenant.reseller.platform, order)).toMatchObject({ delivered: { status: 200 } });
  const job = await waitFor(async () => {
    const [row] = await queryRows<{ id: string; status: string; source_order_id: string | null }>(
      tenant.target.databaseUrl,
      'select id, status, source_order_id from sync_jobs where reseller_store_id = $1 and external_order_id = $2',
      [tenant.reseller.id, String(order.id)],
    );
    return row?.status === 'dead' ? row : null;
  }, 30_000, 'the job dead');
  expect(job.source_order_id).toBeNull();
  sandbox.clearFaults(supplier.shopDomain);
  return { jobId: job.id, order };
}

/**
 * An order whose job's create was carried out but every answer lost (the first and the three
 * idempotent replays): the supplier's one order exists, the job is dead in doubt.
 */
export async function orderWithAnswersLost(sandbox: Sandbox, tenant: Tenant, supplier: Supplier, idPrefix?: string): Promise<{ jobId: string; sourceOrderId: string; order: JsonObject }> {
  const { jobId, order } = await orderWithJobDead(sandbox, tenant, supplier, { acceptThenDropNext: 4 }, idPrefix);
  const [supplierOrder, ...more] = sandbox.ordersFor(supplier.shopDomain);
  expect(more).toEqual([]);
  return { jobId, sourceOrderId: String(supplierOrder!.id), order };
}

/** Deletes the tenant's supplier record (204). */
export async function deleteSupplier(tenant: Tenant, supplier: Supplier): Promise<void> {
  const deleted = await tenant.target.api.delete(`/v1/reseller_stores/${tenant.reseller.id}/source_stores/${supplier.id}`, { token: tenant.user.token });
  expect(deleted.status).toBe(204);
}

/** Deletes the tenant's supplier and creates it again: same platform, shop domain and vendor tag, a new token and secret (and `overrides`). */
export async function recreateSupplier(tenant: Tenant, supplier: Supplier, overrides: Record<string, unknown> = {}): Promise<Supplier> {
  await deleteSupplier(tenant, supplier);
  const secret = `whsec_again_${uniqueSuffix()}`;
  const again = await createSourceStore(tenant.target.api, tenant.user.token, tenant.reseller.id, {
    platform: supplier.platform,
    shopDomain: supplier.shopDomain,
    vendorTag: supplier.vendorTag,
    webhookSecret: secret,
    ...overrides,
  });
  expect(again.id).not.toBe(supplier.id);
  return { id: again.id, shopDomain: again.shopDomain, platform: supplier.platform, secret, vendorTag: supplier.vendorTag };
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
