/**
 * The shop the cancellation tests route orders through: a storefront and two suppliers, Acme
 * (vendor "Acme": anvils and bells) and Bolt (vendor "Bolt": nuts), on the platforms a test picks.
 */
import type { Platform } from '../../src/orders/types.ts';
import { sendWebhook, type OrderLineInput } from '../sandbox/server.ts';
import type { ApiClient } from './api.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './factories.ts';
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
  const user = await registerUser(api);
  const secret = `whsec_reseller_${uniqueSuffix()}`;
  const reseller = await createResellerStore(api, user.token, { platform: resellerPlatform, webhookSecret: secret });
  const acmeSecret = `whsec_acme_${uniqueSuffix()}`;
  const acme = { ...(await createSourceStore(api, user.token, reseller.id, { platform: acmePlatform, vendorTag: 'Acme', webhookSecret: acmeSecret, ...acmeFields })), secret: acmeSecret };
  const bolt = await createSourceStore(api, user.token, reseller.id, { platform: boltPlatform, vendorTag: 'Bolt' });
  return { user, reseller: { ...reseller, secret }, acme, bolt };
}

/** A webhook from the shop's storefront, signed with its secret. */
export function sendStorefrontWebhook(serviceUrl: string, shop: Shop, topic: string, payload: unknown, webhookId?: string) {
  return sendWebhook({ targetUrl: `${serviceUrl}${ORDERS_PATH}`, shopDomain: shop.reseller.shopDomain, secret: shop.reseller.secret, topic, payload, ...(webhookId && { webhookId }) });
}
