/** What the sandbox remembers per shop domain, and the faults it was told to inject. */
import type { Platform } from '../../src/orders/types.ts';
import { buildFulfillmentPayload, buildOrderPayload, cancelledOrder, orderCreatedAt, type JsonObject } from './payloads.ts';
import { sendWebhook, type WebhookResult } from './webhooks.ts';
import { shipStoredOrder, stampUpdated, type Shipment } from './updated.ts';
import { shipOrder as fulfilLines } from './cancellations.ts';

export interface Faults {
  /** Delay before every request to the store is answered. */
  latencyMs?: number;
  /** The next N requests are answered normally before the counted faults below start (e.g. fail page 2). */
  faultsAfter?: number;
  /** The next N requests answer `status`. */
  failNext?: number;
  /** Status for failNext and alwaysFail; default 500. */
  status?: number;
  /** A Retry-After (seconds) on the failNext and alwaysFail answers of another status than 429 (a 503 "down for maintenance"). */
  failRetryAfterSeconds?: number;
  /** The next N requests answer 429 with Retry-After: retryAfterSeconds. */
  rateLimitNext?: number;
  /** Default 1. */
  retryAfterSeconds?: number;
  /** The next N requests get their connection destroyed without an answer. */
  dropNext?: number;
  /** The next N requests are carried out, then the connection is destroyed: a lost response. */
  acceptThenDropNext?: number;
  /** Every request answers `status` until the faults are cleared (with `status: 429`, the 429 mode: Retry-After too). */
  alwaysFail?: boolean;
  /** Every request whose path ends with this answers `status` (default 500) until the faults are cleared; the others as usual. */
  failPathsEnding?: string;
  /** platform_b's list answers come without X-WP-Total and X-WP-TotalPages, as a proxy that drops them sends them. */
  omitListTotals?: boolean;
  /**
   * platform_b's list answers carry X-WP-Total and X-WP-TotalPages twice, merged into one value
   * (`3, 3`), as a proxy that adds the upstream's headers again sends them.
   */
  repeatListTotals?: boolean;
  /** The next N orders/create webhooks the store would send are lost for good (never sent). */
  dropWebhooksNext?: number;
  /** The next N orders/create webhooks are held back until `releaseWebhooks` (a late delivery). */
  holdWebhooksNext?: number;
  /** The next N requests answer 422 with an error text that carries a NUL character. */
  nulErrorNext?: number;
  /** The next N requests answer 422 with an error text whose character 299 starts an emoji (two UTF-16 units). */
  splitEmojiErrorNext?: number;
  /**
   * The next N requests answer with a body of `oversizedBodyBytes` (default 300 MB), status
   * `oversizedBodyStatus` (default 200), streamed so the sandbox itself holds no more than a chunk.
   */
  oversizedBodyNext?: number;
  oversizedBodyBytes?: number;
  oversizedBodyStatus?: number;
  /**
   * The next N requests wait, unanswered, until the test calls `releaseRequests` (a platform that
   * is slow exactly as long as the test needs, with no timing guess); `heldRequests` counts them.
   */
  holdRequestsNext?: number;
  /** Orders placed get an id no service could keep as it is: 300 characters long, or with a NUL in it. */
  unkeepableOrderIds?: 'oversized' | 'nul';
  /**
   * Every request answers 401 echoing the token it presented, as careless platforms do: as sent,
   * as JSON \u escapes, URL-encoded, or base64; `prefix` answers 422 quoting its first 200 characters.
   */
  echoToken?: 'raw' | 'unicode-escaped' | 'url-encoded' | 'base64' | 'prefix';
  /**
   * An enforced rate limit, as a platform's own: a token bucket per access token presented (the
   * credential's, whichever caller sends it), `burst` requests at once refilled at `perSecond`; a
   * request finding it empty answers 429 with Retry-After: retryAfterSeconds (default 1).
   */
  rateLimit?: { perSecond: number; burst: number };
  /**
   * Faults of cancel calls only (platform_a cancel and refunds, platform_b's status update, custom
   * cancel): the next N answer `status` (default 500), or are carried out and their answer lost.
   */
  cancelFailNext?: number;
  cancelStatus?: number;
  cancelAcceptThenDropNext?: number;
  /**
   * platform_a: a GET of one order answers its line ids (its fulfillments' too) shifted by this much,
   * while a refund takes only the ids the create answer gave: a caller that names lines by the ids
   * of a later read is refused (422), one that kept the create answer's ids is not.
   */
  lineIdsOnReadOffset?: number;
}

/** A cancellation a store carried out (the whole order when `lines` is null). */
export interface CarriedOutCancellation {
  platform: Platform;
  orderId: string;
  lines: { sku: string; quantity: number }[] | null;
  at: string;
}

/** Where the store posts its webhooks, and the secret it signs them with. */
export interface WebhookSubscription {
  targetUrl: string;
  secret: string;
}

/** What became of the orders/create webhook of a customer's order. */
export type WebhookFate = { delivered: WebhookResult } | { dropped: true } | { held: true } | { unsubscribed: true };

export interface Reply {
  status: number;
  body?: unknown;
  /** Sent byte for byte (as JSON) instead of the serialised `body`. */
  rawBody?: string;
  headers?: Record<string, string>;
}

export type FaultAction =
  | { kind: 'drop' }
  | { kind: 'acceptThenDrop' }
  | { kind: 'reply'; reply: Reply }
  | { kind: 'stream'; status: number; bytes: number };

const DEFAULT_OVERSIZED_BYTES = 300 * 1024 * 1024;

export interface ReceivedOrder {
  platform: Platform;
  /** The id the sandbox assigned: an integer on platform_a/platform_b, a string on custom. */
  id: number | string;
  idempotencyKey: string | null;
  /** The request body as received. */
  body: unknown;
  /** The platform's order object, as GET returns it and a webhook would carry it. */
  order: JsonObject;
  createdAt: string;
}

export interface ReceivedFulfillment {
  platform: Platform;
  id: number | string;
  orderId: string;
  idempotencyKey: string | null;
  body: unknown;
  /** The platform's fulfillment object, as its fulfillments/create webhook would carry it. */
  payload: JsonObject;
  createdAt: string;
}

export interface RequestRecord {
  method: string;
  /** Path below the shop domain, with the query string. */
  path: string;
  /** Null when the connection was destroyed instead of answered. */
  status: number | null;
  /** True when an Idempotency-Key repeat was answered with the first result. */
  idempotentReplay: boolean;
  at: string;
}

const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export class StoreState {
  accessToken: string | null = null;
  #faults: Faults = {};
  /** The rate limit's bucket per access token presented. */
  readonly #buckets = new Map<string, { tokens: number; refilledAt: number }>();
  webhooks: WebhookSubscription | null = null;
  /** The largest page the store's order lists answer, whatever the caller asks (null: as asked). */
  listPageSize: number | null = null;
  /** orders/create webhooks held back by `holdWebhooksNext`, in order. */
  readonly heldWebhooks: JsonObject[] = [];
  readonly orders: ReceivedOrder[] = [];
  readonly fulfillments: ReceivedFulfillment[] = [];
  readonly cancellations: CarriedOutCancellation[] = [];
  readonly requests: RequestRecord[] = [];
  readonly #orderObjects = new Map<string, JsonObject>();
  readonly #replies = new Map<string, { reply: Reply; expiresAt: number }>();

  order(platform: Platform, id: string): JsonObject | undefined {
    return this.#orderObjects.get(`${platform}:${id}`);
  }

  saveOrder(platform: Platform, order: JsonObject): void {
    const key = `${platform}:${String(order.id)}`;
    this.#orderObjects.set(key, stampUpdated(platform, order, this.#orderObjects.get(key)));
  }

  /** The platform's orders of this store, oldest first (ties in the order they were saved). */
  listOrders(platform: Platform): { order: JsonObject; createdAt: number }[] {
    const prefix = `${platform}:`;
    return [...this.#orderObjects]
      .filter(([key]) => key.startsWith(prefix))
      .map(([, order]) => ({ order, createdAt: orderCreatedAt(platform, order) }))
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  /** The first successful reply to a POST with this Idempotency-Key, for 24 hours. */
  rememberedReply(idempotencyKey: string, now = Date.now()): Reply | undefined {
    const entry = this.#replies.get(idempotencyKey);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > now) return entry.reply;
    this.#replies.delete(idempotencyKey);
    return undefined;
  }

  rememberReply(idempotencyKey: string, reply: Reply, now = Date.now()): void {
    this.#replies.set(idempotencyKey, { reply, expiresAt: now + IDEMPOTENCY_TTL_MS });
  }

  /** As when 24 hours have passed: every Idempotency-Key is forgotten. */
  forgetReplies(): void {
    this.#replies.clear();
  }

  get faults(): Faults {
    return this.#faults;
  }

  /** Replacing the faults refills the rate limit's buckets. */
  set faults(faults: Faults) {
    this.#faults = faults;
    this.#buckets.clear();
  }

  /** Consumes one injected fault for the request being handled (made with `token`), if any applies. */
  takeFault(token: string, path: string, now = Date.now()): FaultAction | null {
    // The enforced rate limit is the platform's own, not an injected fault: faultsAfter does not defer it.
    if (this.#overLimit(token, now)) return { kind: 'reply', reply: this.#tooManyRequests() };
    if (this.faults.failPathsEnding !== undefined && path.endsWith(this.faults.failPathsEnding)) {
      const status = this.faults.status ?? 500;
      return { kind: 'reply', reply: { status, body: { errors: `Simulated failure (${status})` } } };
    }
    if (this.#consume('faultsAfter')) return null;
    if (this.#consume('dropNext')) return { kind: 'drop' };
    if (this.#consume('acceptThenDropNext')) return { kind: 'acceptThenDrop' };
    if (this.#consume('rateLimitNext')) return { kind: 'reply', reply: this.#tooManyRequests() };
    if (this.#consume('oversizedBodyNext')) {
      return { kind: 'stream', status: this.faults.oversizedBodyStatus ?? 200, bytes: this.faults.oversizedBodyBytes ?? DEFAULT_OVERSIZED_BYTES };
    }
    if (this.#consume('nulErrorNext')) {
      return { kind: 'reply', reply: { status: 422, body: { errors: { line_items: ['sku A-1\u0000 is not a valid sku'] } } } };
    }
    if (this.#consume('splitEmojiErrorNext')) {
      return { kind: 'reply', reply: { status: 422, body: { errors: `${'x'.repeat(298)}\u{1F4E6} is out of stock` } } };
    }
    if (this.#consume('failNext') || this.faults.alwaysFail) {
      const status = this.faults.status ?? 500;
      if (status === 429) return { kind: 'reply', reply: this.#tooManyRequests() };
      const headers = this.faults.failRetryAfterSeconds === undefined ? undefined : { 'Retry-After': String(this.faults.failRetryAfterSeconds) };
      return { kind: 'reply', reply: { status, body: { errors: `Simulated failure (${status})` }, ...(headers && { headers }) } };
    }
    return null;
  }

  /** Requests waiting for `releaseRequests`. */
  readonly heldRequests: (() => void)[] = [];

  /** Resolves when the test releases the request, if the store holds it; at once otherwise. */
  holdRequest(): Promise<void> {
    if (!this.#consume('holdRequestsNext')) return Promise.resolve();
    return new Promise((resolve) => this.heldRequests.push(resolve));
  }

  /** What happens to the next orders/create webhook: 'drop', 'hold' or 'send'. */
  takeWebhookFate(): 'drop' | 'hold' | 'send' {
    if (this.#consume('dropWebhooksNext')) return 'drop';
    if (this.#consume('holdWebhooksNext')) return 'hold';
    return 'send';
  }

  #tooManyRequests(): Reply {
    const headers = { 'Retry-After': String(this.faults.retryAfterSeconds ?? 1) };
    return { status: 429, body: { errors: 'Too Many Requests' }, headers };
  }

  #overLimit(token: string, now: number): boolean {
    const limit = this.faults.rateLimit;
    if (!limit) return false;
    const bucket = this.#buckets.get(token) ?? { tokens: limit.burst, refilledAt: now };
    bucket.tokens = Math.min(limit.burst, bucket.tokens + ((now - bucket.refilledAt) / 1000) * limit.perSecond);
    bucket.refilledAt = now;
    this.#buckets.set(token, bucket);
    if (bucket.tokens < 1) return true;
    bucket.tokens -= 1;
    return false;
  }

  /** Consumes one injected cancel fault for a cancel call, if any applies. */
  takeCancelFault(): FaultAction | null {
    if (this.#consume('cancelAcceptThenDropNext')) return { kind: 'acceptThenDrop' };
    if (this.#consume('cancelFailNext')) {
      const status = this.faults.cancelStatus ?? 500;
      return { kind: 'reply', reply: { status, body: { errors: `Simulated cancel failure (${status})` } } };
    }
    return null;
  }

  #consume(
    counter:
      | 'cancelAcceptThenDropNext'
      | 'cancelFailNext'
      | 'faultsAfter'
      | 'dropNext'
      | 'acceptThenDropNext'
      | 'rateLimitNext'
      | 'failNext'
      | 'dropWebhooksNext'
      | 'holdWebhooksNext'
      | 'nulErrorNext'
      | 'splitEmojiErrorNext'
      | 'oversizedBodyNext'
      | 'holdRequestsNext',
  ): boolean {
    const remaining = this.faults[counter] ?? 0;
    if (remaining <= 0) return false;
    this.faults[counter] = remaining - 1;
    return true;
  }
}

/** The in-process control surface; the /_sandbox HTTP API mirrors it. */
export interface SandboxControls {
  /** From now on the store answers 401 unless the request carries this token. */
  registerStore(shopDomain: string, options: { accessToken: string }): void;
  /** Stores a platform-shaped order (see buildOrderPayload) so GET and the order list return it. */
  seedOrder(shopDomain: string, platform: Platform, order: JsonObject): JsonObject;
  /** From now on the store posts its orders/create webhooks to `targetUrl`, signed with `secret`. */
  subscribeWebhooks(shopDomain: string, subscription: WebhookSubscription): void;
  /**
   * A customer orders on the store: the order is stored (GET and the list return it) and its
   * orders/create webhook is posted to the subscription, unless the store's faults drop or hold it.
   */
  placeCustomerOrder(shopDomain: string, platform: Platform, order: JsonObject): Promise<WebhookFate>;
  /** Delivers the held orders/create webhooks now, oldest first. */
  releaseWebhooks(shopDomain: string): Promise<WebhookResult[]>;
  /** How many requests the store holds (`holdRequestsNext`) right now. */
  heldRequestCount(shopDomain: string): number;
  /** Lets the requests the store holds go on to be answered; returns how many were released. */
  releaseRequests(shopDomain: string): number;
  /** The store forgets every Idempotency-Key it remembers, as 24 hours later. */
  forgetIdempotencyKeys(shopDomain: string): void;
  /** The merchant cancels a stored order; its list entry and GET show it cancelled. */
  cancelOrder(shopDomain: string, platform: Platform, id: number | string): JsonObject;
  /**
   * The supplier ships a stored order itself and sends no webhook (see test/sandbox/updated.ts);
   * returns the bodies its fulfillments/create webhooks would carry, for a late delivery.
   */
  shipOrder(shopDomain: string, platform: Platform, id: number | string, shipment: Shipment): JsonObject[];
  /** Order lists of the store answer pages of at most `size` orders (null: as many as asked). */
  setListPageSize(shopDomain: string, size: number | null): void;
  ordersFor(shopDomain: string): ReceivedOrder[];
  fulfillmentsFor(shopDomain: string): ReceivedFulfillment[];
  requestsFor(shopDomain: string): RequestRecord[];
  /**
   * A sale the supplier made on its own (no order of the service's): the order is kept on the store
   * and its fulfillment, as the platform's fulfillments/create webhook would carry it, returned.
   */
  directSaleFulfillment(shopDomain: string, platform: Platform, tracking: { trackingNumbers: string[] }): JsonObject;
  /** The cancellations (cancel, refund, status update) the store carried out, oldest first. */
  cancellationsFor(shopDomain: string): CarriedOutCancellation[];
  /** The supplier ships a stored order (all of it, or these quantities of these lines on platform_a). */
  fulfilLines(shopDomain: string, platform: Platform, id: number | string, lines?: { sku: string; quantity: number }[]): JsonObject;
  /** The stored order as the platform's GET shows it. */
  orderOf(shopDomain: string, platform: Platform, id: number | string): JsonObject | undefined;
  /** Replaces the store's faults. */
  setFaults(shopDomain: string, faults: Faults): void;
  clearFaults(shopDomain: string): void;
  /** Forgets every store: tokens, orders, faults, logs and idempotency keys. */
  reset(): void;
}

export class SandboxState implements SandboxControls {
  readonly #stores = new Map<string, StoreState>();
  /** Never reset, so ids stay unique for the sandbox's lifetime. */
  #nextId = 1001;

  store(shopDomain: string): StoreState {
    const key = shopDomain.toLowerCase();
    let store = this.#stores.get(key);
    if (store === undefined) {
      store = new StoreState();
      this.#stores.set(key, store);
    }
    return store;
  }

  nextId(): number {
    return this.#nextId++;
  }

  registerStore(shopDomain: string, { accessToken }: { accessToken: string }): void {
    this.store(shopDomain).accessToken = accessToken;
  }

  seedOrder(shopDomain: string, platform: Platform, order: JsonObject): JsonObject {
    if (typeof order.id !== 'number' && typeof order.id !== 'string') {
      throw new TypeError('a seeded order needs an id');
    }
    this.store(shopDomain).saveOrder(platform, order);
    return order;
  }

  subscribeWebhooks(shopDomain: string, subscription: WebhookSubscription): void {
    this.store(shopDomain).webhooks = { ...subscription };
  }

  async placeCustomerOrder(shopDomain: string, platform: Platform, order: JsonObject): Promise<WebhookFate> {
    const store = this.store(shopDomain);
    this.seedOrder(shopDomain, platform, order);
    if (store.webhooks === null) return { unsubscribed: true };
    const fate = store.takeWebhookFate();
    if (fate === 'drop') return { dropped: true };
    if (fate === 'hold') {
      store.heldWebhooks.push(order);
      return { held: true };
    }
    return { delivered: await this.#postOrderWebhook(shopDomain, store.webhooks, order) };
  }

  heldRequestCount(shopDomain: string): number {
    return this.store(shopDomain).heldRequests.length;
  }

  forgetIdempotencyKeys(shopDomain: string): void {
    this.store(shopDomain).forgetReplies();
  }

  releaseRequests(shopDomain: string): number {
    const held = this.store(shopDomain).heldRequests.splice(0);
    for (const release of held) release();
    return held.length;
  }

  async releaseWebhooks(shopDomain: string): Promise<WebhookResult[]> {
    const store = this.store(shopDomain);
    const held = store.heldWebhooks.splice(0);
    if (held.length > 0 && store.webhooks === null) throw new Error(`${shopDomain} has held webhooks but no subscription`);
    const results: WebhookResult[] = [];
    for (const order of held) results.push(await this.#postOrderWebhook(shopDomain, store.webhooks!, order));
    return results;
  }

  cancelOrder(shopDomain: string, platform: Platform, id: number | string): JsonObject {
    const store = this.store(shopDomain);
    const order = store.order(platform, String(id));
    if (order === undefined) throw new Error(`no ${platform} order ${id} on ${shopDomain}`);
    const cancelled = cancelledOrder(platform, order);
    store.saveOrder(platform, cancelled);
    return cancelled;
  }

  shipOrder(shopDomain: string, platform: Platform, id: number | string, shipment: Shipment): JsonObject[] {
    return shipStoredOrder(this.store(shopDomain), platform, String(id), shipment, () => this.nextId());
  }

  setListPageSize(shopDomain: string, size: number | null): void {
    if (size !== null && !(Number.isInteger(size) && size >= 1)) throw new RangeError(`invalid page size ${size}`);
    this.store(shopDomain).listPageSize = size;
  }

  #postOrderWebhook(shopDomain: string, subscription: WebhookSubscription, order: JsonObject): Promise<WebhookResult> {
    return sendWebhook({ ...subscription, shopDomain, topic: 'orders/create', payload: order });
  }

  ordersFor(shopDomain: string): ReceivedOrder[] {
    return [...this.store(shopDomain).orders];
  }

  fulfillmentsFor(shopDomain: string): ReceivedFulfillment[] {
    return [...this.store(shopDomain).fulfillments];
  }

  /** The cancellations (cancel, refund, status update) the store carried out, oldest first. */
  cancellationsFor(shopDomain: string): CarriedOutCancellation[] {
    return [...this.store(shopDomain).cancellations];
  }

  /** The supplier ships a stored order (all of it, or these quantities of these lines on platform_a). */
  fulfilLines(shopDomain: string, platform: Platform, id: number | string, lines?: { sku: string; quantity: number }[]): JsonObject {
    return fulfilLines(this.store(shopDomain), platform, String(id), lines);
  }

  /** The stored order as the platform's GET shows it. */
  orderOf(shopDomain: string, platform: Platform, id: number | string): JsonObject | undefined {
    return this.store(shopDomain).order(platform, String(id));
  }

  requestsFor(shopDomain: string): RequestRecord[] {
    return [...this.store(shopDomain).requests];
  }

  directSaleFulfillment(shopDomain: string, platform: Platform, { trackingNumbers }: { trackingNumbers: string[] }): JsonObject {
    const id = this.nextId();
    const orderId = platform === 'custom' ? `ord_${id}` : id;
    this.store(shopDomain).saveOrder(platform, buildOrderPayload(platform, { id: orderId, lines: [{ sku: 'OWN-1', title: 'Sold directly', vendor: shopDomain, quantity: 1, price: '9.00' }] }));
    return buildFulfillmentPayload(platform, { orderId, trackingNumbers, ...(platform === 'platform_a' && { fulfillmentId: this.nextId() }) });
  }

  setFaults(shopDomain: string, faults: Faults): void {
    this.store(shopDomain).faults = { ...faults };
  }

  clearFaults(shopDomain: string): void {
    this.store(shopDomain).faults = {};
  }

  reset(): void {
    this.#stores.clear();
  }
}
