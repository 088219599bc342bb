/**
 * A sandbox platform: one real HTTP server that plays platform_a, platform_b and custom for any
 * shop domain under /{shopDomain}, records what it receives, injects faults on request, and is
 * driven in-process (the Sandbox methods) or over HTTP (/_sandbox/...). Test and demo
 * infrastructure only: the service never imports it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { answerControlRequest } from './control.ts';
import { Refusal, readText, send } from './http.ts';
import { buildOrderPayload } from './payloads.ts';
import { answerPlatformRequest, type PlatformRequest } from './platforms.ts';
import { isCancelCall } from './cancellations.ts';
import { SandboxState, type Reply, type SandboxControls } from './state.ts';

export {
  SAMPLE_ADDRESS,
  buildFulfillmentPayload,
  buildOrderPayload,
  type FulfillmentPayloadInput,
  type JsonObject,
  type OrderLineInput,
  type OrderPayloadInput,
} from './payloads.ts';
export type {
  Faults,
  ReceivedFulfillment,
  ReceivedOrder,
  RequestRecord,
  SandboxControls,
  WebhookFate,
  WebhookSubscription,
} from './state.ts';
export { sendWebhook, type WebhookDelivery, type WebhookResult } from './webhooks.ts';

export interface SandboxOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
}

export interface Sandbox extends SandboxControls {
  /** Base URL, e.g. http://127.0.0.1:4010. */
  readonly url: string;
  /** The service's PLATFORM_BASE_URL: `${url}/{shopDomain}`. */
  readonly baseUrlTemplate: string;
  readonly buildOrderPayload: typeof buildOrderPayload;
  close(): Promise<void>;
}

const CONTROL_PREFIX = '/_sandbox';

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const state = new SandboxState();
  const server = createServer((request, response) => {
    handle(state, request, response).catch((error: unknown) => answerFailure(response, error));
  });
  const host = options.host ?? '127.0.0.1';
  await listen(server, options.port ?? 0, host);
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return Object.assign(state, {
    url,
    baseUrlTemplate: `${url}/{shopDomain}`,
    buildOrderPayload,
    close: () => close(server),
  });
}

async function handle(state: SandboxState, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const receivedAt = new Date().toISOString();
  const { pathname, search } = new URL(request.url ?? '/', 'http://sandbox');
  const method = request.method ?? 'GET';
  const text = await readText(request);
  if (pathname === CONTROL_PREFIX || pathname.startsWith(`${CONTROL_PREFIX}/`)) {
    send(response, await answerControlRequest(state, method, pathname.slice(CONTROL_PREFIX.length), text));
    return;
  }
  const [, shopSegment = '', ...rest] = pathname.split('/');
  const call: PlatformRequest = {
    shopDomain: decodeURIComponent(shopSegment),
    method,
    path: `/${rest.join('/')}`,
    query: new URLSearchParams(search),
    request,
    text,
  };
  const outcome = await servePlatform(state, call, response);
  state.store(call.shopDomain).requests.push({ method, path: `${call.path}${search}`, ...outcome, at: receivedAt });
}

/** Applies the store's injected faults around the platform's own answer. */
async function servePlatform(
  state: SandboxState,
  call: PlatformRequest,
  response: ServerResponse,
): Promise<{ status: number | null; idempotentReplay: boolean }> {
  const store = state.store(call.shopDomain);
  if (store.faults.latencyMs) await delay(store.faults.latencyMs);
  await store.holdRequest();
  const cancelFault = isCancelCall(call.method, call.path) ? store.takeCancelFault() : null;
  const fault = cancelFault ?? store.takeFault(call.request.headers['x-platform-access-token']?.toString() ?? call.request.headers.authorization ?? '', call.path);
  if (fault?.kind === 'drop') {
    response.destroy();
    return { status: null, idempotentReplay: false };
  }
  if (fault?.kind === 'reply') {
    send(response, fault.reply);
    return { status: fault.reply.status, idempotentReplay: false };
  }
  if (fault?.kind === 'stream') {
    await streamBody(response, fault.status, fault.bytes);
    return { status: fault.status, idempotentReplay: false };
  }
  const answered = answerPlatformRequest(state, call);
  const { idempotentReplay } = answered;
  const reply = store.faults.omitListTotals ? withoutListTotals(answered.reply) : store.faults.repeatListTotals ? withRepeatedListTotals(answered.reply) : answered.reply;
  if (fault?.kind === 'acceptThenDrop') {
    response.destroy();
    return { status: null, idempotentReplay };
  }
  send(response, reply);
  return { status: reply.status, idempotentReplay };
}

/** The reply with platform_b's paging totals sent twice, merged into one value (`repeatListTotals`). */
function withRepeatedListTotals(reply: Reply): Reply {
  if (!reply.headers) return reply;
  const headers = Object.fromEntries(Object.entries(reply.headers).map(([name, value]) => [name, /^x-wp-total(pages)?$/i.test(name) ? `${value}, ${value}` : value]));
  return { ...reply, headers };
}

/** The reply without platform_b's paging totals (`omitListTotals`). */
function withoutListTotals(reply: Reply): Reply {
  if (!reply.headers) return reply;
  const headers = Object.fromEntries(Object.entries(reply.headers).filter(([name]) => !/^x-wp-total(pages)?$/i.test(name)));
  return { ...reply, headers };
}

const STREAM_CHUNK = Buffer.alloc(64 * 1024, 'x');

/** A JSON-looking body of `bytes` bytes, written a chunk at a time as the reader takes them; stops when it hangs up. */
async function streamBody(response: ServerResponse, status: number, bytes: number): Promise<void> {
  response.writeHead(status, { 'Content-Type': 'application/json' });
  response.write('{"note":"');
  let sent = 0;
  while (sent < bytes && !response.destroyed) {
    const chunk = STREAM_CHUNK.subarray(0, Math.min(STREAM_CHUNK.length, bytes - sent));
    sent += chunk.length;
    if (!response.write(chunk)) {
      await new Promise<void>((resolve) => {
        const resume = () => {
          response.off('drain', resume);
          response.off('close', resume);
          resolve();
        };
        response.on('drain', resume);
        response.on('close', resume);
      });
    }
  }
  if (!response.destroyed) response.end('"}');
}

function answerFailure(response: ServerResponse, error: unknown): void {
  if (response.headersSent) {
    response.destroy();
  } else if (error instanceof Refusal) {
    send(response, error.reply);
  } else {
    send(response, { status: 500, body: { errors: `sandbox failure: ${(error as Error).message}` } });
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
