/**
 * The tenants, suppliers and orders of the flow-control tests (test/flow-control*.test.ts): each
 * file starts its own sandbox and services, and builds its orders through `flowControlKit`.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { Platform } from '../../src/orders/types.ts';
import { sendWebhook, type Sandbox } from '../sandbox/server.ts';
import { queryRows } from './database.ts';
import { createResellerStore, createSourceStore, registerUser } from './factories.ts';
import type { TestService } from './service.ts';
import { lineOf, newOrderId } from './sync-jobs.ts';
import { ORDERS_PATH } from './webhooks.ts';
import { waitFor } from './wait.ts';

/** The supplier's own limit in the sandbox, and the service's pacing of platform_a stores: the same. */
export const LIMIT = { perSecond: 5, burst: 10 };
export const PACING = `platform_a=${LIMIT.perSecond}:${LIMIT.burst}`;

export interface Tenant {
  token: string;
  reseller: { id: string; shopDomain: string; platform: Platform };
  webhookSecret: string;
}

export async function openTenant(service: TestService, platform: Platform = 'platform_a'): Promise<Tenant> {
  const user = await registerUser(service.api);
  const webhookSecret = `whsec_${randomBytes(12).toString('hex')}`;
  const reseller = await createResellerStore(service.api, user.token, { platform, webhookSecret });
  return { token: user.token, reseller: { ...reseller, platform }, webhookSecret };
}

export async function addSupplier(service: TestService, tenant: Tenant, overrides: Record<string, unknown> = {}) {
  return createSourceStore(service.api, tenant.token, tenant.reseller.id, { platform: 'platform_a', ...overrides });
}

/** Orders posted as their storefront's orders/create webhooks, seeded on the storefront in the file's sandbox. */
export function flowControlKit(sandboxOf: () => Sandbox) {
  /** Posts `count` orders of one vendor, eight at a time; returns their jobs' ids. */
  async function postOrders(service: TestService, tenant: Tenant, vendorTag: string, count: number): Promise<string[]> {
    const jobIds: string[] = [];
    const ids = Array.from({ length: count }, () => Number(newOrderId()));
    for (let i = 0; i < ids.length; i += 8) {
      const answers = await Promise.all(ids.slice(i, i + 8).map((id) => postOrder(service, tenant, vendorTag, id)));
      jobIds.push(...answers.flat());
    }
    return jobIds;
  }

  async function postOrder(service: TestService, tenant: Tenant, vendorTag: string, id = Number(newOrderId())): Promise<string[]> {
    const sandbox = sandboxOf();
    const { platform, shopDomain } = tenant.reseller;
    const payload = sandbox.buildOrderPayload(platform, { id, lines: [lineOf(vendorTag)] });
    // On the store too, as the platform has it (a fulfillment is added to it later).
    sandbox.seedOrder(shopDomain, platform, payload);
    const answer = await sendWebhook({
      targetUrl: `${service.url}${ORDERS_PATH}`,
      shopDomain: tenant.reseller.shopDomain,
      secret: tenant.webhookSecret,
      topic: 'orders/create',
      payload,
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return (answer.body as { syncJobIds: string[] }).syncJobIds;
  }

  /** Sends one order and measures from the webhook to its supplier receiving it (ms). */
  async function latencyToSupplier(service: TestService, tenant: Tenant, supplier: { shopDomain: string; vendorTag: string }): Promise<number> {
    const sandbox = sandboxOf();
    const before = sandbox.ordersFor(supplier.shopDomain).length;
    const sentAt = Date.now();
    await postOrder(service, tenant, supplier.vendorTag);
    const received = await waitFor(async () => sandbox.ordersFor(supplier.shopDomain)[before], 15_000, `an order at ${supplier.shopDomain}`);
    return Date.parse(received.createdAt) - sentAt;
  }

  return { postOrders, postOrder, latencyToSupplier };
}

export async function jobRows(databaseUrl: string, ids: string[]) {
  return queryRows<{ id: string; status: string; attempts: number }>(databaseUrl, 'select id, status, attempts from sync_jobs where id = any($1::text[])', [ids]);
}

export async function allCompleted(databaseUrl: string, ids: string[], timeoutMs: number): Promise<void> {
  await waitFor(
    async () => (await jobRows(databaseUrl, ids)).every((job) => job.status === 'completed'),
    timeoutMs,
    `${ids.length} completed jobs`,
  );
}
