/**
 * GET /v1/sync_jobs/{id}/attempts and the fulfillments' `timeline`: one entry per attempt, written
 * by the worker with the take and the outcome, against the real database, queue and sandbox. (An
 * attempt whose worker died is covered by test/sync-jobs.crash.test.ts.)
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { buildFulfillmentPayload, sendWebhook, type Sandbox } from './sandbox/server.ts';
import { ISO_UTC } from './support/assertions.ts';
import { registerUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { addSupplier, createJob, lineOf, openShop, seedResellerOrder, settled, waitForJob, type Shop } from './support/sync-jobs.ts';
import { waitFor } from './support/wait.ts';

const it = test
  .extend('timelineOf', { scope: 'file' }, ({ api }) => async (shop: Shop, jobId: string) => {
    const response = await api.get(`/v1/sync_jobs/${jobId}/attempts`, { token: shop.user.token });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body).toMatchObject({ object: 'list', has_more: false, url: `/v1/sync_jobs/${jobId}/attempts` });
    return response.body.data as any[];
  })
  .extend('jobFor', { scope: 'file' }, ({ api, sandbox }) => async (faults: Parameters<Sandbox['setFaults']>[1], supplierOverrides: Record<string, unknown> = {}) => {
    const shop = await openShop(api);
    const supplier = await addSupplier(api, shop, { vendorTag: 'Acme', ...supplierOverrides });
    sandbox.setFaults(supplier.shopDomain, faults);
    const job = await createJob(api, shop.user.token, supplier.id, seedResellerOrder(sandbox, shop, [lineOf('Acme')]));
    return { shop, supplier, job };
  });

/** Every entry is finished after it started, in order, and its duration is the difference. */
function expectConsistent(timeline: any[]) {
  timeline.forEach((entry, i) => {
    expect(entry.attempt).toBe(i + 1);
    expect(entry.startedAt).toMatch(ISO_UTC);
    if (entry.outcome === 'in_progress') {
      expect(entry).toMatchObject({ finishedAt: null, durationMs: null });
      return;
    }
    expect(entry.durationMs).toBe(Date.parse(entry.finishedAt) - Date.parse(entry.startedAt));
    expect(entry.durationMs).toBeGreaterThanOrEqual(0);
    if (i > 0) expect(Date.parse(entry.startedAt)).toBeGreaterThanOrEqual(Date.parse(timeline[i - 1].finishedAt));
  });
}

describe('GET /v1/sync_jobs/{id}/attempts', () => {
  it('keeps every attempt across automatic retries, death and a manual retry, with the platform status of each', async ({ api, sandbox, timelineOf, jobFor }) => {
    const { shop, supplier, job } = await jobFor({ alwaysFail: true, status: 503 });
    const dead = await settled(api, shop.user.token, job.id);
    expect(dead.status).toBe('dead');
    // Dead: no automatic retry is scheduled any more.
    expect(dead.nextRetryAt).toBeNull();

    const failed = { outcome: 'failed', platformStatus: 503, sourceOrderId: null, errorMessage: expect.stringContaining('answered 503') };
    let timeline = await timelineOf(shop, job.id);
    expect(timeline).toEqual([
      expect.objectContaining({ attempt: 1, trigger: 'initial', ...failed }),
      expect.objectContaining({ attempt: 2, trigger: 'automatic_retry', ...failed }),
      expect.objectContaining({ attempt: 3, trigger: 'automatic_retry', ...failed }),
      expect.objectContaining({ attempt: 4, trigger: 'automatic_retry', ...failed }),
    ]);
    expectConsistent(timeline);

    sandbox.clearFaults(supplier.shopDomain);
    expect((await api.post(`/v1/sync_jobs/${job.id}/retry`, { token: shop.user.token })).status).toBe(200);
    const done = await settled(api, shop.user.token, job.id);
    expect(done.status).toBe('completed');
    expect(done.nextRetryAt).toBeNull();
    timeline = await timelineOf(shop, job.id);
    expect(timeline).toHaveLength(5);
    expect(timeline.slice(0, 4)).toEqual(timeline.slice(0, 4).map(() => expect.objectContaining(failed)));
    expect(timeline[4]).toEqual({
      attempt: 5,
      trigger: 'manual_retry',
      startedAt: expect.stringMatching(ISO_UTC),
      finishedAt: expect.stringMatching(ISO_UTC),
      durationMs: expect.any(Number),
      outcome: 'succeeded',
      errorMessage: null,
      platformStatus: 201,
      request: { method: 'POST', path: expect.stringMatching(/\/orders/), body: expect.any(String) },
      response: { status: 201, body: expect.stringContaining(String(done.sourceOrderId)) },
      sourceOrderId: done.sourceOrderId,
    });
    expectConsistent(timeline);
  });

  it('shows the attempt in progress while the platform call runs; no answer means no platform status', async ({ api, timelineOf, jobFor }) => {
    const { shop, job } = await jobFor({ latencyMs: 1_500, dropNext: 1 });
    await waitForJob(api, shop.user.token, job.id, (j) => j.status === 'processing', 10_000, 'processing');
    expect(await timelineOf(shop, job.id)).toEqual([
      expect.objectContaining({ attempt: 1, trigger: 'initial', outcome: 'in_progress', finishedAt: null, durationMs: null, platformStatus: null, errorMessage: null }),
    ]);
    const done = await settled(api, shop.user.token, job.id);
    expect(done.status).toBe('completed');
    const timeline = await timelineOf(shop, job.id);
    expect(timeline).toEqual([
      expect.objectContaining({ attempt: 1, trigger: 'initial', outcome: 'failed', platformStatus: null, errorMessage: expect.stringMatching(/socket|closed|ECONNRESET|other side/i) }),
      expect.objectContaining({ attempt: 2, trigger: 'automatic_retry', outcome: 'succeeded', platformStatus: 201, sourceOrderId: done.sourceOrderId }),
    ]);
    expect(timeline[0].durationMs).toBeGreaterThanOrEqual(1_000);
    expectConsistent(timeline);
  });

  it("another user's job is not found, like a missing one", async ({ api, jobFor }) => {
    const { job } = await jobFor({});
    const stranger = await registerUser(api);
    for (const id of [job.id, 'job_missing']) {
      const response = await api.get(`/v1/sync_jobs/${id}/attempts`, { token: stranger.token });
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('not_found');
    }
  });
});

describe('a fulfillment’s timeline (GET /v1/sync_jobs/{id})', () => {
  it('lists its own attempts: a failed push to the reseller, then the automatic retry that succeeded', async ({ service, api, sandbox, timelineOf, jobFor }) => {
    const supplierSecret = 'whsec_supplier_timeline_0123456789';
    const { shop, supplier, job } = await jobFor({}, { webhookSecret: supplierSecret });
    const placed = await settled(api, shop.user.token, job.id);
    expect(placed.status).toBe('completed');

    sandbox.setFaults(shop.reseller.shopDomain, { failNext: 1, status: 502 });
    const delivered = await sendWebhook({
      targetUrl: `${service.url}/v1/fulfillments/webhook`,
      shopDomain: supplier.shopDomain,
      secret: supplierSecret,
      topic: 'fulfillments/create',
      payload: buildFulfillmentPayload(supplier.platform as Platform, { orderId: placed.sourceOrderId, trackingNumbers: ['TRK-42'] }),
    });
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);

    const withTracking = await waitFor(async () => {
      const body = (await api.get(`/v1/sync_jobs/${job.id}`, { token: shop.user.token })).body;
      return body.fulfillments[0]?.status === 'completed' ? body : null;
    }, 15_000, 'the fulfillment to complete');
    const [fulfillment] = withTracking.fulfillments;
    expect(fulfillment.timeline).toEqual([
      expect.objectContaining({ attempt: 1, trigger: 'initial', outcome: 'failed', platformStatus: 502, resellerFulfillmentId: null, errorMessage: expect.stringContaining('502') }),
      expect.objectContaining({ attempt: 2, trigger: 'automatic_retry', outcome: 'succeeded', platformStatus: 201, resellerFulfillmentId: fulfillment.resellerFulfillmentId, errorMessage: null }),
    ]);
    expectConsistent(fulfillment.timeline);
    // The job's own timeline is its own: one attempt.
    expect(await timelineOf(shop, job.id)).toHaveLength(1);
  });
});
