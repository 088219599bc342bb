/**
 * The HTTP mirror of SandboxControls under /_sandbox, so a sandbox started as its own process
 * (npm run sandbox) can be driven by a demo or a benchmark.
 */
import { z } from 'zod';
import { PLATFORMS } from '../../src/orders/types.ts';
import { NOT_FOUND, accept, jsonBody } from './http.ts';
import type { Reply, SandboxState } from './state.ts';
import { sendWebhook } from './webhooks.ts';

interface ControlCall {
  state: SandboxState;
  /** The shop domain captured from the path, for store routes. */
  shopDomain: string;
  body: unknown;
}

type ControlRoute = [method: string, path: RegExp, handle: (call: ControlCall) => Reply | Promise<Reply>];

const count = z.number().int().nonnegative();
const faultsSchema = z
  .object({
    latencyMs: count.optional(),
    failNext: count.optional(),
    status: z.number().int().min(400).max(599).optional(),
    rateLimitNext: count.optional(),
    retryAfterSeconds: z.number().nonnegative().optional(),
    dropNext: count.optional(),
    acceptThenDropNext: count.optional(),
    alwaysFail: z.boolean().optional(),
  })
  .strict();

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
  ['GET', new RegExp(`^${STORE}/fulfillments$`), ({ state, shopDomain }) => ok(state.fulfillmentsFor(shopDomain))],
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
  const shopDomain = decodeURIComponent(pattern.exec(path)?.[1] ?? '');
  return handle({ state, shopDomain, body: jsonBody(text) });
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
