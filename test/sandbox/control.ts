/**
 * The HTTP mirror of SandboxControls under /_sandbox, so a sandbox started as its own process
 * (npm run sandbox) can be driven by a demo or a benchmark.
 */
import { z } from 'zod';
import { PLATFORMS } from '../../src/orders/types.ts';
import { NOT_FOUND, Refusal, accept, jsonBody } from './http.ts';
import type { Reply, SandboxState } from './state.ts';
import { sendWebhook } from './webhooks.ts';

interface ControlCall {
  state: SandboxState;
  /** The shop domain captured from the path, for store routes. */
  shopDomain: string;
  /** A second path segment the route captures (an order id), or ''. */
  captured: string;
  body: unknown;
}

type ControlRoute = [method: string, path: RegExp, handle: (call: ControlCall) => Reply | Promise<Reply>];

const count = z.number().int().nonnegative();
const faultsSchema = z
  .object({
    latencyMs: count.optional(),
    faultsAfter: count.optional(),
    failNext: count.optional(),
    status: z.number().int().min(400).max(599).optional(),
    rateLimitNext: count.optional(),
    retryAfterSeconds: z.number().nonnegative().optional(),
    failRetryAfterSeconds: z.number().nonnegative().optional(),
    dropNext: count.optional(),
    acceptThenDropNext: count.optional(),
    alwaysFail: z.boolean().optional(),
    failPathsEnding: z.string().min(1).optional(),
    dropWebhooksNext: count.optional(),
    holdWebhooksNext: count.optional(),
    nulErrorNext: count.optional(),
    splitEmojiErrorNext: count.optional(),
    oversizedBodyNext: count.optional(),
    holdRequestsNext: count.optional(),
    oversizedBodyBytes: count.optional(),
    oversizedBodyStatus: z.number().int().min(200).max(599).optional(),
    unkeepableOrderIds: z.enum(['oversized', 'nul']).optional(),
    echoToken: z.enum(['raw', 'unicode-escaped', 'url-encoded', 'base64', 'prefix']).optional(),
    rateLimit: z.object({ perSecond: z.number().positive(), burst: z.number().int().positive() }).strict().optional(),
    cancelFailNext: count.optional(),
    cancelStatus: z.number().int().min(400).max(599).optional(),
    cancelAcceptThenDropNext: count.optional(),
    lineIdsOnReadOffset: count.optional(),
    omitListTotals: z.boolean().optional(),
    repeatListTotals: z.boolean().optional(),
  })
  .strict();

const subscriptionSchema = z.object({ targetUrl: z.string().url(), secret: z.string().min(1) });
const pageSizeSchema = z.object({ size: z.number().int().positive().nullable() });
const cancelSchema = z.object({ platform: z.enum(PLATFORMS) });
const shipSchema = z.object({
  platform: z.enum(PLATFORMS),
  trackingNumbers: z.array(z.string().min(1)).min(1),
  trackingUrls: z.array(z.string()).optional(),
  company: z.string().optional(),
  keepOpen: z.boolean().optional(),
});

const storeSchema = z.object({ accessToken: z.string().min(1) });
const seedSchema = z.object({
  platform: z.enum(PLATFORMS),
  order: z.object({ id: z.union([z.number(), z.string()]) }).passthrough(),
});
const webhookSchema = z.object({
  targetUrl: z.string().url(),
  shopDomain: z.string().min(1),
  secret: z.string().min(1),
  topic: z.string().min(1),
  payload: z.unknown(),
  webhookId: z.string().min(1).optional(),
});

const NO_CONTENT: Reply = { status: 204 };
const STORE = '/stores/([^/]+)';

const ROUTES: ControlRoute[] = [
  [
    'POST',
    /^\/reset$/,
    ({ state }) => {
      state.reset();
      return NO_CONTENT;
    },
  ],
  [
    'PUT',
    new RegExp(`^${STORE}$`),
    ({ state, shopDomain, body }) => {
      state.registerStore(shopDomain, accept(storeSchema, body, 400));
      return NO_CONTENT;
    },
  ],
  [
    'POST',
    new RegExp(`^${STORE}/faults$`),
    ({ state, shopDomain, body }) => {
      state.setFaults(shopDomain, accept(faultsSchema, body, 400));
      return NO_CONTENT;
    },
  ],
  [
    'DELETE',
    new RegExp(`^${STORE}/faults$`),
    ({ state, shopDomain }) => {
      state.clearFaults(shopDomain);
      return NO_CONTENT;
    },
  ],
  [
    'POST',
    new RegExp(`^${STORE}/orders$`),
    ({ state, shopDomain, body }) => {
      const { platform, order } = accept(seedSchema, body, 400);
      return { status: 201, body: state.seedOrder(shopDomain, platform, order) };
    },
  ],
  ['GET', new RegExp(`^${STORE}/orders$`), ({ state, shopDomain }) => ok(state.ordersFor(shopDomain))],
  [
    'PUT',
    new RegExp(`^${STORE}/webhooks$`),
    ({ state, shopDomain, body }) => {
      state.subscribeWebhooks(shopDomain, accept(subscriptionSchema, body, 400));
      return NO_CONTENT;
    },
  ],
  [
    'POST',
    new RegExp(`^${STORE}/customer_orders$`),
    async ({ state, shopDomain, body }) => {
      const { platform, order } = accept(seedSchema, body, 400);
      return { status: 201, body: { order, webhook: await state.placeCustomerOrder(shopDomain, platform, order) } };
    },
  ],
  [
    'POST',
    new RegExp(`^${STORE}/orders/([^/]+)/cancel$`),
    ({ state, shopDomain, body, captured }) => {
      const { platform } = accept(cancelSchema, body, 400);
      return ok(state.cancelOrder(shopDomain, platform, captured));
    },
  ],
  [
    'POST',
    new RegExp(`^${STORE}/orders/([^/]+)/ship$`),
    ({ state, shopDomain, body, captured }) => {
      const { platform, ...shipment } = accept(shipSchema, body, 400);
      return ok(state.shipOrder(shopDomain, platform, captured, shipment));
    },
  ],
  ['POST', new RegExp(`^${STORE}/webhooks/release$`), async ({ state, shopDomain }) => ok(await state.releaseWebhooks(shopDomain))],
  [
    'PUT',
    new RegExp(`^${STORE}/list_page_size$`),
    ({ state, shopDomain, body }) => {
      state.setListPageSize(shopDomain, accept(pageSizeSchema, body, 400).size);
      return NO_CONTENT;
    },
  ],
  ['GET', new RegExp(`^${STORE}/fulfillments$`), ({ state, shopDomain }) => ok(state.fulfillmentsFor(shopDomain))],
  ['GET', new RegExp(`^${STORE}/cancellations$`), ({ state, shopDomain }) => ok(state.cancellationsFor(shopDomain))],
  ['GET', new RegExp(`^${STORE}/requests$`), ({ state, shopDomain }) => ok(state.requestsFor(shopDomain))],
  ['POST', /^\/webhooks$/, ({ body }) => deliverWebhook(accept(webhookSchema, body, 400))],
];

/** Answers a control call; `path` is below /_sandbox. */
export async function answerControlRequest(
  state: SandboxState,
  method: string,
  path: string,
  text: string,
): Promise<Reply> {
  const route = ROUTES.find(([routeMethod, pattern]) => routeMethod === method && pattern.test(path));
  if (route === undefined) return NOT_FOUND;
  const [, pattern, handle] = route;
  const match = pattern.exec(path);
  const shopDomain = decodeURIComponent(match?.[1] ?? '');
  const captured = decodeURIComponent(match?.[2] ?? '');
  try {
    return await handle({ state, shopDomain, captured, body: jsonBody(text) });
  } catch (error) {
    // A control call the state refuses (an unknown order, a bad page size) is the caller's mistake.
    if (error instanceof Error && !(error instanceof Refusal)) return { status: 400, body: { errors: error.message } };
    throw error;
  }
}

async function deliverWebhook(delivery: z.infer<typeof webhookSchema>): Promise<Reply> {
  try {
    const { status, body, webhookId } = await sendWebhook(delivery);
    return ok({ status, body, webhookId });
  } catch (error) {
    return { status: 502, body: { errors: `webhook delivery failed: ${(error as Error).message}` } };
  }
}

function ok(body: unknown): Reply {
  return { status: 200, body };
}
