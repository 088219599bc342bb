/**
 * The shop the cancellation tests route orders through: a storefront and two suppliers, Acme
 * (vendor "Acme": anvils and bells) and Bolt (vendor "Bolt": nuts), on the platforms a test picks.
 */
import { expect } from 'vitest';
import type { Platform } from '../../src/orders/types.ts';
import { sendWebhook, type JsonObject, type OrderLineInput, type ReceivedOrder, type Sandbox } from '../sandbox/server.ts';
import type { ApiClient } from './api.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './factories.ts';
import { waitForJob } from './sync-jobs.ts';
import { ORDERS_PATH, uniqueSuffix } from './webhooks.ts';

export interface Store {
  id: string;
  shopDomain: string;
  platform: Platform;
}

export interface Shop {
  user: TestUser;
  reseller: Store & { secret: string };
  acme: Store & { secret: string };
  bolt: Store;
}

export const ANVIL: OrderLineInput = { sku: 'A-1', title: 'Anvil', vendor: 'Acme', quantity: 2, price: '25.00' };
export const BELL: OrderLineInput = { sku: 'B-1', title: 'Bell', vendor: 'Acme', quantity: 3, price: '5.00' };
export const NUT: OrderLineInput = { sku: 'N-1', title: 'Nut', vendor: 'Bolt', quantity: 4, price: '1.00' };

/** A job whose cancellations have all ended, one way or the other. */
export const settled = (job: any) => job.cancellations.length > 0 && job.cancellations.every((c: any) => c.status === 'completed' || c.status === 'dead');

/** A new user's shop: the storefront and Acme with webhook secrets the test signs with (`acmeFields`: more of Acme's fields, e.g. its pricing). */
export async function createShop(api: ApiClient, resellerPlatform: Platform, acmePlatform: Platform, boltPlatform: Platform = 'custom', acmeFields: Record<string, unknown> = {}): Promise<Shop> {
  const shop = await createAcmeShop(api, resellerPlatform, acmePlatform, acmeFields);
  const bolt = await createSourceStore(api, shop.user.token, shop.reseller.id, { platform: boltPlatform, vendorTag: 'Bolt' });
  return { ...shop, bolt };
}

/** The shop of `createShop` with Acme alone: no Bolt. */
export async function createAcmeShop(api: ApiClient, resellerPlatform: Platform, acmePlatform: Platform, acmeFields: Record<string, unknown> = {}): Promise<Omit<Shop, 'bolt'>> {
  const user = await registerUser(api);
  const secret = `whsec_reseller_${uniqueSuffix()}`;
  const reseller = await createResellerStore(api, user.token, { platform: resellerPlatform, webhookSecret: secret });
  const acmeSecret = `whsec_acme_${uniqueSuffix()}`;
  const acme = { ...(await createSourceStore(api, user.token, reseller.id, { platform: acmePlatform, vendorTag: 'Acme', webhookSecret: acmeSecret, ...acmeFields })), secret: acmeSecret };
  return { user, reseller: { ...reseller, secret }, acme };
}

/** A webhook from the shop's storefront, signed with its secret. */
export function sendStorefrontWebhook(serviceUrl: string, shop: Pick<Shop, 'reseller'>, topic: string, payload: unknown, webhookId?: string) {
  return sendWebhook({ targetUrl: `${serviceUrl}${ORDERS_PATH}`, shopDomain: shop.reseller.shopDomain, secret: shop.reseller.secret, topic, payload, ...(webhookId && { webhookId }) });
}

/**
 * An order of the shop's storefront whose placement answer was lost: Acme accepts the order, then
 * every answer (the first and its three idempotent replays) is lost, and the job dies without the
 * supplier's order id. Acme holds the order (`held`, its only one); its faults are cleared after.
 */
export async function placeWithAnswerLost(api: ApiClient, sandbox: Sandbox, serviceUrl: string, shop: Omit<Shop, 'bolt'>, order: JsonObject): Promise<{ jobId: string; held: ReceivedOrder }> {
  sandbox.setFaults(shop.acme.shopDomain, { acceptThenDropNext: 4 });
  sandbox.seedOrder(shop.reseller.shopDomain, shop.reseller.platform, order);
  const routed = await sendStorefrontWebhook(serviceUrl, shop, 'orders/create', order);
  const jobId = (routed.body as { syncJobIds: string[] }).syncJobIds[0]!;
  await waitForJob(api, shop.user.token, jobId, (job) => job.status === 'dead', 20_000);
  sandbox.clearFaults(shop.acme.shopDomain);
  const [held, ...more] = sandbox.ordersFor(shop.acme.shopDomain);
  expect(held).toBeDefined();
  expect(more).toEqual([]);
  return { jobId, held: held! };
}

/**
 * A busy supplier's backlog: `count` orders of other customers (one line, 1.00) created from
 * `beforeMs` before `held`, `stepMs` apart, that a lookup of the orders created since the job reads
 * before the one it holds. Their ids: `backlog_<n>` on custom, 7,000,000 + n on the others.
 */
export function seedBacklog(sandbox: Sandbox, supplier: Store, held: ReceivedOrder, count: number, { beforeMs, stepMs }: { beforeMs: number; stepMs: number }): void {
  const heldAt = Date.parse(held.createdAt);
  for (let n = 0; n < count; n++) {
    sandbox.seedOrder(supplier.shopDomain, supplier.platform, sandbox.buildOrderPayload(supplier.platform, {
      id: supplier.platform === 'custom' ? `backlog_${n}` : 7_000_000 + n,
      lines: [{ sku: 'B-1', title: 'Other', vendor: 'Acme', quantity: 1, price: '1.00' }],
      createdAt: new Date(heldAt - beforeMs + n * stepMs).toISOString(),
    }));
  }
}
