/**
 * Webhook delivery the way a platform does it (platforms.md): signed over the raw bytes, one
 * `X-Platform-Webhook-Id` per event repeated by every redelivery, 5 s to answer, and redelivered
 * until a 2xx comes back. Time is compressed: redeliveries follow after 100 ms, doubling to 1 s.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { signPayload } from '../../../src/webhooks/signature.ts';
import { ledger } from './ledger.ts';

export interface WebhookEvent {
  /** Read at every attempt: the service may come back on another URL. */
  url: () => string;
  shopDomain: string;
  secret: string;
  topic: 'orders/create' | 'fulfillments/create' | 'orders/cancelled';
  payload: unknown;
}

export interface DeliveryAttempt {
  /** null when no answer came (refused, reset, timed out). */
  status: number | null;
  ms: number;
  error?: string;
  body?: any;
  /** Wall-clock start, for telling which attempts overlapped an outage. */
  startedAt: number;
}

export interface DeliveryResult {
  webhookId: string;
  attempts: DeliveryAttempt[];
  /** The 2xx answer that ended the deliveries. */
  accepted: { status: number; body: any };
}

const PLATFORM_WAIT_MS = 5_000;

export async function deliverUntilAccepted(event: WebhookEvent, options: { giveUpAfterMs?: number } = {}): Promise<DeliveryResult> {
  const webhookId = randomUUID();
  const raw = Buffer.from(JSON.stringify(event.payload));
  const signature = signPayload(raw, event.secret);
  const attempts: DeliveryAttempt[] = [];
  const deadline = Date.now() + (options.giveUpAfterMs ?? 180_000);
  for (let backoff = 100; ; backoff = Math.min(backoff * 2, 1_000)) {
    const startedAt = Date.now();
    const started = performance.now();
    try {
      const response = await fetch(event.url(), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-platform-hmac-sha256': signature,
          'x-platform-shop-domain': event.shopDomain,
          'x-platform-topic': event.topic,
          'x-platform-webhook-id': webhookId,
        },
        body: new Uint8Array(raw),
        signal: AbortSignal.timeout(PLATFORM_WAIT_MS),
      });
      const text = await response.text();
      ledger.response(`POST webhook ${event.topic}`, response.status, response.headers, text);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
      attempts.push({ status: response.status, ms: performance.now() - started, body, startedAt });
      if (response.status >= 200 && response.status < 300) return { webhookId, attempts, accepted: { status: response.status, body } };
    } catch (error) {
      attempts.push({ status: null, ms: performance.now() - started, error: String((error as Error).cause ?? error), startedAt });
    }
    if (Date.now() > deadline) {
      throw new Error(`webhook ${webhookId} never accepted after ${attempts.length} deliveries: ${JSON.stringify(attempts.slice(-3))}`);
    }
    await delay(backoff);
  }
}

/** Runs `work` over `items` with at most `limit` at a time, keeping the results in order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!, index);
    }
  });
  await Promise.all(lanes);
  return results;
}
