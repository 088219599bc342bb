/**
 * A cancellation of a job never attempted calls no supplier, so it waits for none of the supplier's
 * turns: it ends the job at once, even while the supplier is paused by a 429 or busy with a backlog,
 * and the order is never placed. Booking a turn it would not use made it wait for the pause, while
 * the placements booked before it went first: the order could reach the supplier, then need
 * cancelling there. (Whether a turn is booked is not asserted: the store's other messages book theirs meanwhile.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendWebhook, startSandbox, type Sandbox } from './sandbox/server.ts';
import { addSupplier, flowControlKit, openTenant } from './support/flow-control.ts';
import { startTestService, type TestService } from './support/service.ts';
import { orderPosts, waitForJob } from './support/sync-jobs.ts';
import { ORDERS_PATH } from './support/webhooks.ts';
import { waitFor } from './support/wait.ts';

let sandbox: Sandbox;
let service: TestService;
beforeAll(async () => {
  sandbox = await startSandbox();
  service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, MAX_RETRY_AFTER_MS: '10000' });
});
afterAll(async () => {
  await service?.stop();
  await sandbox?.close();
});
const { postOrders, postOrder } = flowControlKit(() => sandbox);

describe('a cancellation of a job never attempted, its supplier paused by a 429', () => {
  it('ends the job not placed at once, and the order never reaches the supplier', async () => {
    const tenant = await openTenant(service);
    const supplier = await addSupplier(service, tenant, { platform: 'custom', vendorTag: 'PauseCo' });
    sandbox.setFaults(supplier.shopDomain, { rateLimitNext: 1, retryAfterSeconds: 10 });
    // The first order's call is refused: the store is paused for 10 s.
    const [firstJob] = await postOrders(service, tenant, supplier.vendorTag, 1);
    await waitFor(async () => orderPosts(sandbox, supplier.shopDomain).some((post) => post.status === 429), 10_000, 'the 429');
    const refusedAt = Date.now();

    // An order routed during the pause waits for the supplier without an attempt; then the customer cancels it.
    const orderId = Date.now() % 1_000_000_000;
    const [jobId] = await postOrder(service, tenant, supplier.vendorTag, orderId);
    const job = await waitForJob(service.api, tenant.token, jobId!, (j) => j.status === 'pending', 5_000, 'pending');
    expect(job.attempts).toBe(0);
    const order = sandbox.buildOrderPayload('platform_a', { id: orderId, lines: [] }) as Record<string, unknown>;
    const cancelled = await sendWebhook({
      targetUrl: `${service.url}${ORDERS_PATH}`,
      shopDomain: tenant.reseller.shopDomain,
      secret: tenant.webhookSecret,
      topic: 'orders/cancelled',
      payload: { ...order, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' },
    });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);

    const ended = await waitForJob(service.api, tenant.token, jobId!, (j) => j.cancellations[0]?.status === 'completed', 15_000, 'cancellation completed');
    // Long before the pause ends: it waited for no turn.
    expect(Date.now() - refusedAt).toBeLessThan(7_000);
    expect(ended).toMatchObject({ status: 'completed', sourceOrderId: null, attempts: 0 });
    expect(ended.cancellations).toEqual([expect.objectContaining({ outcome: 'not_placed', attempts: 1 })]);

    // After the pause the first order is placed, and it is the only order the supplier ever receives.
    await waitForJob(service.api, tenant.token, firstJob!, (j) => j.status === 'completed', 20_000, 'the first order placed');
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
  }, 60_000);
});
