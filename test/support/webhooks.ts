/** Helpers for the webhook suites: raw signed deliveries and what a delivery left behind. */
import { randomBytes } from 'node:crypto';
import { signPayload } from '../../src/webhooks/signature.ts';
import type { ApiResponse } from './api.ts';
import { queryRows } from './database.ts';

export const ORDERS_PATH = '/v1/orders/webhook';
export const FULFILLMENTS_PATH = '/v1/fulfillments/webhook';

export const uniqueSuffix = () => randomBytes(4).toString('hex');

export interface RawDelivery {
  /** The bytes sent. */
  body: string | Buffer;
  /** Signs these bytes instead of `body` (a tampered body). */
  signedBody?: string | Buffer;
  /** Omit to send no signature header. */
  secret?: string;
  /** Turns the signature into the header value actually sent (a mangled signature). */
  mangleSignature?: (signature: string) => string;
  /** Omit to send no shop domain header. */
  shopDomain?: string;
  topic?: string;
  webhookId?: string;
  contentType?: string;
  /** Sent as X-Forwarded-For: the client address a service with TRUST_PROXY=true sees. */
  forwardedFor?: string;
}

/**
 * Posts a webhook with full control over every header, for the deliveries `sendWebhook` cannot
 * make (no signature, no shop domain, a signature over other bytes, another content type).
 */
export async function postRawWebhook(baseUrl: string, path: string, delivery: RawDelivery): Promise<ApiResponse> {
  const body = Buffer.from(delivery.body);
  const headers: Record<string, string> = { 'content-type': delivery.contentType ?? 'application/json' };
  if (delivery.secret !== undefined) {
    const signature = signPayload(Buffer.from(delivery.signedBody ?? body), delivery.secret);
    headers['x-platform-hmac-sha256'] = delivery.mangleSignature ? delivery.mangleSignature(signature) : signature;
  }
  if (delivery.shopDomain !== undefined) headers['x-platform-shop-domain'] = delivery.shopDomain;
  if (delivery.topic !== undefined) headers['x-platform-topic'] = delivery.topic;
  headers['x-platform-webhook-id'] = delivery.webhookId ?? `wh-${uniqueSuffix()}`;
  if (delivery.forwardedFor !== undefined) headers['x-forwarded-for'] = delivery.forwardedFor;
  const response = await fetch(`${baseUrl}${path}`, { method: 'POST', headers, body: new Uint8Array(body) });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: kept as text
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

export interface SyncJobRow {
  id: string;
  source_store_id: string;
  external_order_id: string;
  status: string;
  attempts: number;
  source_order_id: string | null;
}

export function syncJobRows(databaseUrl: string, resellerStoreId: string): Promise<SyncJobRow[]> {
  return queryRows<SyncJobRow>(
    databaseUrl,
    'select id, source_store_id, external_order_id, status, attempts, source_order_id from sync_jobs where reseller_store_id = $1 order by id',
    [resellerStoreId],
  );
}

export interface FulfillmentRow {
  id: string;
  sync_job_id: string;
  dedupe_key: string;
  status: string;
  attempts: number;
  reseller_fulfillment_id: string | null;
}

export function fulfillmentRows(databaseUrl: string, resellerStoreId: string): Promise<FulfillmentRow[]> {
  return queryRows<FulfillmentRow>(
    databaseUrl,
    'select id, sync_job_id, dedupe_key, status, attempts, reseller_fulfillment_id from fulfillments where reseller_store_id = $1 order by id',
    [resellerStoreId],
  );
}

/** Audit entries a webhook could have caused: everything but the stores' own management. */
export function webhookAuditRows(databaseUrl: string, resellerStoreId: string): Promise<{ action: string; resource_id: string; metadata: any }[]> {
  return queryRows(
    databaseUrl,
    `select action, resource_id, metadata from audit_entries
      where reseller_store_id = $1 and action not like 'reseller\\_store.%' and action not like 'source\\_store.%'
      order by id`,
    [resellerStoreId],
  );
}

/** Every queue message ever sent for these rows (pg-boss keeps completed ones for a day). */
export async function queueMessageCount(databaseUrl: string, queue: 'sync-job.process' | 'fulfillment.propagate', ids: string[]): Promise<number> {
  const key = queue === 'sync-job.process' ? 'syncJobId' : 'fulfillmentId';
  const [row] = await queryRows<{ count: string }>(
    databaseUrl,
    `select count(*) from pgboss.job where name = $1 and data->>'${key}' = any($2::text[])`,
    [queue, ids],
  );
  return Number(row!.count);
}
