/** Helpers for the reconciliation suites: reseller stores whose sandbox posts their webhooks, and runs. */
import { expect } from 'vitest';
import type { Platform } from '../../src/orders/types.ts';
import type { JsonObject, Sandbox } from '../sandbox/server.ts';
import type { ApiClient } from './api.ts';
import { queryRows } from './database.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './factories.ts';
import { waitFor } from './wait.ts';
import { ORDERS_PATH, uniqueSuffix } from './webhooks.ts';

/** Where a reseller's store lives: the service it is connected to. */
export interface Target {
  api: ApiClient;
  url: string;
  databaseUrl: string;
}

export interface Reseller {
  target: Target;
  user: TestUser;
  store: { id: string; shopDomain: string; platform: Platform };
  accessToken: string;
  secret: string;
  supplier: { id: string; shopDomain: string; vendorTag: string };
}

let nextOrderNumber = 800_000 + Math.floor(Math.random() * 100_000) * 10;

/**
 * A user with a reseller store on `platform` whose sandbox store posts its orders/create webhooks
 * to the service, and one custom supplier matching the lines of `orderOf`.
 */
export async function openReseller(sandbox: Sandbox, target: Target, platform: Platform, user?: TestUser): Promise<Reseller> {
  const owner = user ?? (await registerUser(target.api));
  const accessToken = `tok_reseller_${uniqueSuffix()}${uniqueSuffix()}`;
  const secret = `whsec_reseller_${uniqueSuffix()}`;
  const store = await createResellerStore(target.api, owner.token, { platform, accessToken, webhookSecret: secret });
  sandbox.registerStore(store.shopDomain, { accessToken });
  sandbox.subscribeWebhooks(store.shopDomain, { targetUrl: `${target.url}${ORDERS_PATH}`, secret });
  const supplier = await createSourceStore(target.api, owner.token, store.id, { platform: 'custom', vendorTag: `Acme ${uniqueSuffix()}` });
  return { target, user: owner, store, accessToken, secret, supplier };
}

/** The reseller platform's order object: one line of the supplier's vendor, 2 × 20.00. */
export function orderOf(sandbox: Sandbox, reseller: Reseller, createdAt?: Date): JsonObject {
  const n = nextOrderNumber++;
  return sandbox.buildOrderPayload(reseller.store.platform, {
    id: reseller.store.platform === 'custom' ? `co-${n}` : n,
    lines: [{ sku: 'ANV-1', title: 'Anvil', vendor: reseller.supplier.vendorTag, quantity: 2, price: '20.00' }],
    email: 'ada@example.com',
    ...(createdAt && { createdAt: createdAt.toISOString() }),
  });
}

export type WebhookPlan = 'deliver' | 'drop' | 'hold';

/** Customers place `count` orders; their webhooks are delivered, lost, or held back. Returns the order objects. */
export async function placeOrders(sandbox: Sandbox, reseller: Reseller, count: number, plan: WebhookPlan): Promise<JsonObject[]> {
  const orders: JsonObject[] = [];
  for (let i = 0; i < count; i++) {
    if (plan === 'drop') sandbox.setFaults(reseller.store.shopDomain, { dropWebhooksNext: 1 });
    if (plan === 'hold') sandbox.setFaults(reseller.store.shopDomain, { holdWebhooksNext: 1 });
    const order = orderOf(sandbox, reseller);
    const fate = await sandbox.placeCustomerOrder(reseller.store.shopDomain, reseller.store.platform, order);
    if (plan === 'deliver') expect(fate).toMatchObject({ delivered: { status: 200 } });
    else expect(fate).toEqual(plan === 'drop' ? { dropped: true } : { held: true });
    orders.push(order);
  }
  return orders;
}

export const idOf = (order: JsonObject) => String(order.id);

/** POST …/reconcile; returns the reconciliation id. */
export async function reconcile(reseller: Reseller, body: Record<string, unknown> = {}): Promise<string> {
  const response = await reseller.target.api.post(`/v1/reseller_stores/${reseller.store.id}/reconcile`, { token: reseller.user.token, body });
  expect(response.status, JSON.stringify(response.body)).toBe(202);
  return response.body.reconciliationId;
}

export async function runsOf(reseller: Reseller): Promise<any[]> {
  const response = await reseller.target.api.get(`/v1/reseller_stores/${reseller.store.id}/reconciliations?limit=100`, { token: reseller.user.token });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data;
}

/** Waits until the run has finished; returns it as GET …/reconciliations shows it. */
export function finishedRun(reseller: Reseller, id: string, timeoutMs = 20_000): Promise<any> {
  return waitFor(
    async () => {
      const run = (await runsOf(reseller)).find((candidate) => candidate.id === id);
      return run && run.status !== 'running' ? run : null;
    },
    timeoutMs,
    `reconciliation ${id}`,
  );
}

/** Each order's sync jobs, by external order id. */
export async function jobsByOrder(reseller: Reseller): Promise<Map<string, string[]>> {
  const rows = await queryRows<{ id: string; external_order_id: string }>(
    reseller.target.databaseUrl,
    'select id, external_order_id from sync_jobs where reseller_store_id = $1 order by id',
    [reseller.store.id],
  );
  const jobs = new Map<string, string[]>();
  for (const row of rows) jobs.set(row.external_order_id, [...(jobs.get(row.external_order_id) ?? []), row.id]);
  return jobs;
}

export function auditEntries(reseller: Reseller, action: string): Promise<{ resource_id: string; metadata: any }[]> {
  return queryRows(
    reseller.target.databaseUrl,
    'select resource_id, metadata from audit_entries where reseller_store_id = $1 and action = $2 order by id',
    [reseller.store.id, action],
  );
}

export function routedOrders(reseller: Reseller): Promise<{ external_order_id: string; source: string }[]> {
  return queryRows(
    reseller.target.databaseUrl,
    'select external_order_id, source from routed_orders where reseller_store_id = $1 order by external_order_id',
    [reseller.store.id],
  );
}

export async function watermarkOf(reseller: Reseller): Promise<{ watermark: Date; reconciled_until: Date } | undefined> {
  const [row] = await queryRows<{ watermark: Date; reconciled_until: Date }>(
    reseller.target.databaseUrl,
    'select watermark, reconciled_until from reconciliation_watermarks where reseller_store_id = $1',
    [reseller.store.id],
  );
  return row;
}

/** Waits until the supplier has received at least `count` orders; returns them. */
export function supplierOrders(sandbox: Sandbox, reseller: Reseller, count: number) {
  return waitFor(async () => {
    const orders = sandbox.ordersFor(reseller.supplier.shopDomain);
    return orders.length >= count ? orders : null;
  }, 20_000, `${count} supplier orders`);
}

/** The list calls the reseller's store received (every GET of its order list). */
export function listCalls(sandbox: Sandbox, reseller: Reseller) {
  return sandbox.requestsFor(reseller.store.shopDomain).filter((request) => request.method === 'GET');
}
