import { z } from 'zod';
import { c, errors, RequestId, signedBy } from './common.ts';
import { MAX_AMOUNT_MINOR, MAX_QUANTITY, MAX_TRACKING_NUMBERS_PER_FULFILLMENT } from './limits.ts';

const WebhookHeaders = z.object({
  'x-platform-hmac-sha256': z
    .string()
    .optional()
    .describe('Canonical base64 (44 characters, padded) of the HMAC-SHA256 of the raw body, keyed with the store\'s webhook secret.'),
  'x-platform-shop-domain': z.string().optional().describe('The sending store\'s domain.'),
  'x-platform-topic': z.string().optional(),
  'x-platform-webhook-id': z.string().optional().describe('Repeated by redeliveries of one event.'),
});

const Received = z.object({
  received: z.literal(true),
  ignored: z.literal(true).optional().describe('Present when the topic (or this payload of it) asks for nothing: nothing changed, and the platform must not retry.'),
  syncJobIds: z.array(z.string()).optional().describe('Sync jobs created or found for the order, or given a cancellation by this signal (a redelivery of the signal answers the jobs it has reached by then, as does a whole-order cancellation the divergence watch applied first, which it de-duplicates).'),
  request_id: RequestId,
});

const webhookErrors = errors(400, 401, 413, 415, 500, 503);
/** A fulfillment delivery may also meet the limit on failed signatures of its domain or client. */
const fulfillmentWebhookErrors = errors(400, 401, 413, 415, 429, 500, 503);

/** The body is the platform's own order / fulfillment object (see platforms.md). */
const PlatformPayload = z.record(z.unknown());

export const webhooksContract = c.router(
  {
    orders: {
      method: 'POST',
      path: '/v1/orders/webhook',
      headers: WebhookHeaders,
      body: PlatformPayload,
      responses: { 200: Received, ...webhookErrors },
      summary: 'Receive a reseller store\'s order webhook',
      metadata: signedBy('reseller_store'),
      description:
        `Sent by a reseller store's platform. Verified over the raw bytes before anything else; routes the order's lines to source stores by vendor and creates one sync job per matched source store. Redeliveries create nothing new. Amounts are read in the minor units ISO 4217 gives the order's currency; each line's quantity must be a whole number from 1 to ${MAX_QUANTITY.toLocaleString('en')}, and its unit price and total (price × quantity) at most ${MAX_AMOUNT_MINOR.toLocaleString('en')} minor units. An order that breaks any rule is refused as a whole (400 \`validation_failed\`, \`param\` naming the field, e.g. \`line_items.0.quantity\`) and the refusal is recorded in the audit log as \`order.refused\` with the reason. Topics (\`X-Platform-Topic\`): \`orders/create\` routes the order; \`orders/cancelled\` (platform_a, custom), \`refunds/create\` (platform_a; only lines with \`restock_type: "cancel"\` count) and \`orders/updated\` (platform_b, status \`cancelled\` or \`refunded\`) cancel the order or those lines at its suppliers (see each sync job's \`cancellations\`). A cancellation of an order not routed yet is recorded, and the order is routed as cancelled when it comes. Any other topic, or a payload of these that asks for nothing, is answered 200 with \`ignored: true\`.`,
    },
    fulfillments: {
      method: 'POST',
      path: '/v1/fulfillments/webhook',
      headers: WebhookHeaders,
      body: PlatformPayload,
      responses: { 200: Received, ...fulfillmentWebhookErrors },
      summary: 'Receive a source store\'s fulfillment or cancellation webhook',
      metadata: signedBy('source_stores'),
      description:
        `Sent by a source store's platform. Queues the tracking to be added to the reseller order, once per fulfillment: a delivery under an \`X-Platform-Webhook-Id\` seen before, or of the same fulfillment (the platform's fulfillment id, else the order and its tracking numbers, however the JSON is written), adds nothing. A fulfillment of an order no sync job has recorded is answered 200 at once (\`syncJobIds\` empty): it is kept when a job of the supplier could own the order (its answer was lost) and applied once that job completes, and otherwise acknowledged as the supplier's own sale. Tracking without a number, for a reseller platform that needs one, is recorded \`skipped\` and never sent. A fulfillment with more than ${MAX_TRACKING_NUMBERS_PER_FULFILLMENT} tracking numbers is refused as a whole (400 \`validation_failed\`, \`param\` \`tracking_numbers\`). Failed signatures are limited per shop domain and per client (\`WEBHOOK_SIGNATURE_FAILURES_PER_MINUTE\`); past the limit a delivery that none of the domain's proven senders (those whose deliveries verified before) signed answers 429 with Retry-After, and the platform delivers it again. The supplier's own cancellation of an order the service placed (\`orders/cancelled\` on platform_a and custom, \`orders/updated\` with status \`cancelled\` on platform_b) sets the job's \`supplierCancelledAt\` and \`supplierCancelReason\` (event \`sync_job.supplier_cancelled\`); the storefront order is not changed. Any other topic is answered 200 with \`ignored: true\`.`,
    },
    fulfillmentsForStore: {
      method: 'POST',
      path: '/v1/fulfillments/webhook/:source_store_id',
      pathParams: z.object({ source_store_id: z.string().min(1).max(64).describe('The id of the source store whose platform sends the webhook.') }),
      headers: WebhookHeaders,
      body: PlatformPayload,
      responses: { 200: Received, ...webhookErrors, ...errors(404) },
      summary: "Receive a source store's fulfillments/create webhook",
      metadata: signedBy('source_store'),
      description: `The URL to subscribe a source store's fulfillments/create webhook to: verified with that store's webhook secret alone (one HMAC), so what other source stores on the same shop domain did, or how many failed signatures a shared platform address sent, never delays or refuses it. 401 \`invalid_signature\` when the store does not exist, was deleted, or did not sign the body (404 \`not_found\` only for a path that names no route, such as an id of dots). Otherwise as \`POST /v1/fulfillments/webhook\`, which keeps working for stores subscribed to it.`,
    },
  },
);
