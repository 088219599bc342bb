/**
 * A call that reserves its own turn of a busy store (src/platforms/http.ts `#waitForTurn`): it waits
 * for a turn within the connection's `maxTurnWaitMs` (the adapters' longest inline wait unless told)
 * and fails unsent, retryable and naming the wait, for one further away. Cancellations' extra calls
 * (src/cancellations/attempt.ts), the divergence watch and reconciliation give a longer wait, since
 * failing there spends a retry or a run. Real pacer (PostgreSQL) and sandbox.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlatformAdapters, PlatformError, type PlatformAdapter, type StoreConnection } from '../src/platforms/index.ts';
import type { SharedPacer } from '../src/pacing/pacer.ts';
import { buildOrderPayload, startSandbox, type Sandbox } from './sandbox/server.ts';
import { startTestPacing } from './support/pacer.ts';

/** Four calls a second, one at once: twelve turns reserved ahead put the next about three seconds away. */
const RATE = { perSecond: 4, burst: 1 };
const INLINE_WAIT_MS = 1_500;

let sandbox: Sandbox;
let pacing: Awaited<ReturnType<typeof startTestPacing>>;
let pacer: SharedPacer;
let adapter: PlatformAdapter;
let stores = 0;

beforeAll(async () => {
  sandbox = await startSandbox();
  pacing = await startTestPacing();
  pacer = pacing.pacer({ platform_a: RATE });
  adapter = createPlatformAdapters({ baseUrlTemplate: sandbox.baseUrlTemplate, timeoutMs: 2_000, maxInlineRetryAfterMs: INLINE_WAIT_MS, pacer }).platform_a;
});
afterAll(async () => {
  await pacing.close();
  await sandbox.close();
});

/** A store with one order, whose next turn is about three seconds away (twelve turns taken by others). */
async function busyStore(): Promise<{ store: StoreConnection; orderId: number }> {
  stores += 1;
  const store: StoreConnection = { storeId: `turn_store_${stores}`, platform: 'platform_a', shopDomain: `turn-${stores}.example`, accessToken: `tok_turn_secret_${stores}` };
  sandbox.registerStore(store.shopDomain, { accessToken: store.accessToken });
  const orderId = 7_000 + stores;
  sandbox.seedOrder(store.shopDomain, 'platform_a', buildOrderPayload('platform_a', { id: orderId, lines: [{ sku: 'T-1', title: 'Thing', vendor: 'Acme', quantity: 1, price: '10.00' }] }));
  for (let i = 0; i < 12; i++) await pacer.reserve({ storeId: store.storeId, platform: 'platform_a' });
  return { store, orderId };
}

describe("a call waiting for its store's turn", () => {
  it('fails unsent and retryable when the turn is further away than the inline wait, and names the wait', async () => {
    const { store, orderId } = await busyStore();
    const error = await adapter.getOrder(store, String(orderId)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PlatformError);
    expect(error).toMatchObject({ retryable: true, sent: false, message: expect.stringMatching(/not sent: the store's next turn is in \d+ ms/) });
    expect((error as PlatformError).retryAfterMs).toBeGreaterThan(INLINE_WAIT_MS);
    // Nothing reached the platform.
    expect(sandbox.requestsFor(store.shopDomain)).toEqual([]);
  });

  it('waits for the turn when the connection allows a longer wait, then makes the call', async () => {
    const { store, orderId } = await busyStore();
    const started = Date.now();
    const order = await adapter.getOrder({ ...store, maxTurnWaitMs: 60_000 }, String(orderId));
    expect(order.externalOrderId).toBe(String(orderId));
    // It waited for its turn (about three seconds) instead of failing after the inline wait.
    expect(Date.now() - started).toBeGreaterThan(INLINE_WAIT_MS);
    expect(sandbox.requestsFor(store.shopDomain).map(({ method }) => method)).toEqual(['GET']);
  });
});
