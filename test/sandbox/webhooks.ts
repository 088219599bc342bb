import { randomUUID } from 'node:crypto';
import { signPayload } from '../../src/webhooks/signature.ts';

export interface WebhookDelivery {
  targetUrl: string;
  shopDomain: string;
  /** The store's webhook secret the signature is keyed with. */
  secret: string;
  /** `orders/create` or `fulfillments/create` (anything else, to test rejection). */
  topic: string;
  /** Serialised as JSON unless rawBody is given. */
  payload?: unknown;
  /** Sent and signed byte for byte instead of the serialised payload. */
  rawBody?: string | Buffer;
  /**
   * Serialise the payload with every object's keys in reverse order: the same fulfillment written
   * differently, as a platform's redelivery may be (its signature is over these bytes).
   */
  reorderKeys?: boolean;
  /** Repeat one to simulate a redelivery; a random UUID when absent. */
  webhookId?: string;
  /** How long the platform waits for an answer; 5 s like the real ones. */
  timeoutMs?: number;
}

export interface WebhookResult {
  status: number;
  /** Parsed JSON when the target answered JSON, otherwise the text. */
  body: unknown;
  webhookId: string;
}

const PLATFORM_WAIT_MS = 5_000;

/** Posts a webhook signed the way the platforms sign theirs. */
export async function sendWebhook(delivery: WebhookDelivery): Promise<WebhookResult> {
  const payload = delivery.reorderKeys ? reversedKeys(delivery.payload ?? null) : (delivery.payload ?? null);
  const rawBody = Buffer.from(delivery.rawBody ?? JSON.stringify(payload));
  const webhookId = delivery.webhookId ?? randomUUID();
  const response = await fetch(delivery.targetUrl, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'X-Platform-Hmac-SHA256': signPayload(rawBody, delivery.secret),
      'X-Platform-Shop-Domain': delivery.shopDomain,
      'X-Platform-Topic': delivery.topic,
      'X-Platform-Webhook-Id': webhookId,
    },
    body: new Uint8Array(rawBody),
    signal: AbortSignal.timeout(delivery.timeoutMs ?? PLATFORM_WAIT_MS),
  });
  const text = await response.text();
  const isJson = response.headers.get('content-type')?.includes('json') ?? false;
  return { status: response.status, body: isJson ? parseOrKeep(text) : text, webhookId };
}

function reversedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).reverse().map(([key, inner]) => [key, reversedKeys(inner)]));
}

function parseOrKeep(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
