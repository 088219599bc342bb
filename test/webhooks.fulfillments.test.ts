/**
 * fulfillments/create webhooks end to end: an order is routed and placed on the sandbox, the
 * supplier's platform posts its fulfillment, and the tracking must reach the reseller order once.
 */
import { describe, expect } from 'vitest';
import type { Platform } from '../src/orders/types.ts';
import { buildFulfillmentPayload, sendWebhook, type FulfillmentPayloadInput } from './sandbox/server.ts';
import { expectError, withoutRequestId } from './support/assertions.ts';
import { createResellerStore, createSourceStore, registerUser, type TestUser } from './support/factories.ts';
import { test } from './support/fixtures.ts';
import { waitFor } from './support/wait.ts';
import {
  FULFILLMENTS_PATH,
  ORDERS_PATH,
  fulfillmentRows,
  postRawWebhook,
  queueMessageCount,
  syncJobRows,
  uniqueSuffix,
  webhookAuditRows,
} from './support/webhooks.ts';

let nextOrderId = 820_000;
let nextFulfillmentId = 5_000_000;

interface Store {
  id: string;
  shopDomain: string;
  platform: Platform;
}

interface Routed {
  user: TestUser;
  reseller: Store;
  resellerSecret: string;
  resellerOrderId: string;
  supplier: Store;
  supplierSecret: string;
  job: { id: string; sourceOrderId: string };
}

interface RouteOptions {
  resellerPlatform: Platform;
  supplierPlatform: Platform;
  supplierDomain?: string;
  supplierSecret?: string;
}

function fulfillmentOf(routed: Routed, input: Partial<FulfillmentPayloadInput> = {}) {
  return buildFulfillmentPayload(routed.supplier.platform, {
    orderId: routed.job.sourceOrderId,
    trackingNumbers: ['TRK-1'],
    ...input,
  });
}

function expectReceived(response: { status: number; body: unknown }, syncJobIds: string[]) {
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  const body = response.body as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(['received', 'request_id', 'syncJobIds']);
  expect(body.received).toBe(true);
  expect(body.request_id).toMatch(/.+/);
  expect(body.syncJobIds).toEqual(syncJobIds);
}

const it = test
  /**
   * A reseller with one supplier and an order routed to it and placed on the sandbox. The reseller's
   * order is seeded on the sandbox too, so the tracking can be posted to it.
   */
  .extend('routedOrder', { scope: 'file' }, ({ service, api, sandbox }) => async (options: RouteOptions): Promise<Routed> => {
    const user = await registerUser(api);
    const resellerSecret = `whsec_reseller_${uniqueSuffix()}`;
    const reseller = await createResellerStore(api, user.token, { platform: options.resellerPlatform, webhookSecret: resellerSecret });
    const supplierSecret = options.supplierSecret ?? `whsec_supplier_${uniqueSuffix()}`;
    const supplier = await createSourceStore(api, user.token, reseller.id, {
      platform: options.supplierPlatform,
      vendorTag: 'Acme Tools',
      webhookSecret: supplierSecret,
      ...(options.supplierDomain && { shopDomain: options.supplierDomain }),
    });
    const id = options.resellerPlatform === 'custom' ? `ord_${nextOrderId++}` : nextOrderId++;
    const payload = sandbox.buildOrderPayload(options.resellerPlatform, {
      id,
      lines: [{ sku: 'A-1', title: 'Anvil', vendor: 'Acme Tools', quantity: 1, price: '25.00' }],
    });
    sandbox.seedOrder(reseller.shopDomain, options.resellerPlatform, payload);
    const routed = await sendWebhook({
      targetUrl: `${service.url}${ORDERS_PATH}`,
      shopDomain: reseller.shopDomain,
      secret: resellerSecret,
      topic: 'orders/create',
      payload,
    });
    expect(routed.status, JSON.stringify(routed.body)).toBe(200);
    const [jobId] = (routed.body as { syncJobIds: string[] }).syncJobIds;
    const job = await waitFor(async () => {
      const response = await api.get(`/v1/sync_jobs/${jobId}`, { token: user.token });
      if (response.body.status === 'dead') throw new Error(`job died: ${response.body.errorMessage}`);
      return response.body.status === 'completed' ? response.body : null;
    }, 15_000, 'the order to be placed');
    return { user, reseller, resellerSecret, resellerOrderId: String(id), supplier, supplierSecret, job };
  })
  .extend('deliverFulfillment', { scope: 'file' }, ({ service }) =>
    (routed: Routed, payload: unknown, extra: { webhookId?: string; secret?: string; shopDomain?: string } = {}) =>
      sendWebhook({
        targetUrl: `${service.url}${FULFILLMENTS_PATH}`,
        shopDomain: extra.shopDomain ?? routed.supplier.shopDomain,
        secret: extra.secret ?? routed.supplierSecret,
        topic: 'fulfillments/create',
        payload,
        ...(extra.webhookId !== undefined && { webhookId: extra.webhookId }),
      }))
  /** The job's fulfillments once they are all completed (fails fast when one dies). */
  .extend('completedFulfillments', { scope: 'file' }, ({ api }) => (routed: Routed, count: number) =>
    waitFor(async () => {
      const response = await api.get(`/v1/sync_jobs/${routed.job.id}`, { token: routed.user.token });
      const fulfillments = response.body.fulfillments as { status: string; errorMessage: string | null }[];
      const dead = fulfillments.find((fulfillment) => fulfillment.status === 'dead');
      if (dead) throw new Error(`fulfillment died: ${dead.errorMessage}`);
      return fulfillments.length === count && fulfillments.every((fulfillment) => fulfillment.status === 'completed') ? response.body : null;
    }, 15_000, 'fulfillments to complete'))
  /** Nothing of a fulfillment was recorded, queued or sent for the reseller. */
  .extend('expectNoFulfillment', { scope: 'file' }, ({ service, sandbox }) => async (routed: Routed) => {
    expect(await fulfillmentRows(service.databaseUrl, routed.reseller.id)).toEqual([]);
    const audit = await webhookAuditRows(service.databaseUrl, routed.reseller.id);
    expect(audit.filter((entry) => entry.action.startsWith('fulfillment.'))).toEqual([]);
    expect(sandbox.fulfillmentsFor(routed.reseller.shopDomain)).toEqual([]);
  });

describe('back-sync', () => {
  const cases: {
    supplier: Platform;
    reseller: Platform;
    tracking: Omit<FulfillmentPayloadInput, 'orderId'>;
    expected: { numbers: string[]; urls: string[]; company: string | null };
    /** What the reseller platform's API receives. */
    request: unknown;
  }[] = [
    {
      supplier: 'platform_a',
      reseller: 'custom',
      tracking: { trackingNumbers: ['1Z001', '1Z002'], trackingUrls: ['https://ups.example/1Z001', 'https://ups.example/1Z002'], company: 'UPS' },
      expected: { numbers: ['1Z001', '1Z002'], urls: ['https://ups.example/1Z001', 'https://ups.example/1Z002'], company: 'UPS' },
      request: {
        trackingNumbers: ['1Z001', '1Z002'],
        trackingUrls: ['https://ups.example/1Z001', 'https://ups.example/1Z002'],
        carrier: 'UPS',
        notifyCustomer: true,
      },
    },
    {
      supplier: 'platform_b',
      reseller: 'platform_a',
      tracking: { trackingNumbers: ['JD0142'], trackingUrls: ['https://dhl.example/JD0142'], company: 'DHL' },
      expected: { numbers: ['JD0142'], urls: ['https://dhl.example/JD0142'], company: 'DHL' },
      request: {
        fulfillment: {
          tracking_number: 'JD0142',
          tracking_numbers: ['JD0142'],
          tracking_url: 'https://dhl.example/JD0142',
          tracking_urls: ['https://dhl.example/JD0142'],
          tracking_company: 'DHL',
          notify_customer: true,
        },
      },
    },
    {
      supplier: 'custom',
      reseller: 'platform_b',
      tracking: { trackingNumbers: ['FX-77'], trackingUrls: ['https://fedex.example/FX-77'], company: 'FedEx' },
      expected: { numbers: ['FX-77'], urls: ['https://fedex.example/FX-77'], company: 'FedEx' },
      // This platform's shipment-tracking API has no notification flag: adding the tracking notifies.
      request: { tracking_provider: 'FedEx', tracking_number: 'FX-77', tracking_link: 'https://fedex.example/FX-77' },
    },
    {
      supplier: 'platform_a',
      reseller: 'platform_a',
      tracking: { trackingNumbers: ['A1', 'A2'], trackingUrls: [], company: null },
      expected: { numbers: ['A1', 'A2'], urls: [], company: null },
      request: { fulfillment: { tracking_number: 'A1', tracking_numbers: ['A1', 'A2'], tracking_urls: [], notify_customer: true } },
    },
  ];

  it.for(cases)('brings a $supplier fulfillment back to a $reseller reseller order', async ({ supplier, reseller, tracking, expected, request }, { service, sandbox, routedOrder, deliverFulfillment, completedFulfillments }) => {
    const routed = await routedOrder({ resellerPlatform: reseller, supplierPlatform: supplier });
    const payload = fulfillmentOf(routed, { ...tracking, ...(supplier === 'platform_a' && { fulfillmentId: nextFulfillmentId++ }) });

    const startedAt = performance.now();
    const response = await deliverFulfillment(routed, payload);
    expect(performance.now() - startedAt).toBeLessThan(2_000);
    expectReceived(response, [routed.job.id]);

    const detail = await completedFulfillments(routed, 1);
    const [sent, ...more] = sandbox.fulfillmentsFor(routed.reseller.shopDomain);
    expect(more).toHaveLength(0);
    expect(sent!.platform).toBe(reseller);
    expect(sent!.orderId).toBe(routed.resellerOrderId);
    expect(sent!.body).toEqual(request);
    const [fulfillment] = detail.fulfillments;
    expect(fulfillment).toMatchObject({
      status: 'completed',
      attempts: 1,
      trackingNumbers: expected.numbers,
      trackingUrls: expected.urls,
      trackingCompany: expected.company,
      resellerFulfillmentId: String(sent!.id),
      errorMessage: null,
    });
    expect(fulfillment.completedAt).toEqual(expect.any(String));
    expect(sent!.idempotencyKey).toBe(`fulfillment:${fulfillment.id}`);
    // The supplier's own order was left alone, and the job itself is unchanged.
    expect(sandbox.fulfillmentsFor(routed.supplier.shopDomain)).toEqual([]);
    expect(detail).toMatchObject({ status: 'completed', sourceOrderId: routed.job.sourceOrderId });

    const actions = (await webhookAuditRows(service.databaseUrl, routed.reseller.id)).map((entry) => entry.action);
    expect(actions.filter((action) => action.startsWith('fulfillment.'))).toEqual(['fulfillment.received', 'fulfillment.completed']);
  });
});

describe('applied once', () => {
  it('applies a platform_a fulfillment once, whether redelivered or resent under a new webhook id', async ({ service, sandbox, routedOrder, deliverFulfillment, completedFulfillments }) => {
    const routed = await routedOrder({ resellerPlatform: 'platform_a', supplierPlatform: 'platform_a' });
    const payload = fulfillmentOf(routed, { fulfillmentId: nextFulfillmentId++, trackingNumbers: ['ONCE-1'] });
    const first = await deliverFulfillment(routed, payload);
    expectReceived(first, [routed.job.id]);
    expectReceived(await deliverFulfillment(routed, payload, { webhookId: first.webhookId }), [routed.job.id]);
    expectReceived(await deliverFulfillment(routed, payload), [routed.job.id]);
    await completedFulfillments(routed, 1);
    // And once more after it was applied.
    expectReceived(await deliverFulfillment(routed, payload), [routed.job.id]);

    const rows = await fulfillmentRows(service.databaseUrl, routed.reseller.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ dedupe_key: `fulfillment:${payload.id}`, status: 'completed', attempts: 1 });
    expect(await queueMessageCount(service.databaseUrl, 'fulfillment.propagate', [rows[0]!.id])).toBe(1);
    expect(sandbox.fulfillmentsFor(routed.reseller.shopDomain)).toHaveLength(1);

    // A second shipment of the same order (another fulfillment id) is a fulfillment of its own.
    const second = fulfillmentOf(routed, { fulfillmentId: nextFulfillmentId++, trackingNumbers: ['ONCE-2'] });
    expectReceived(await deliverFulfillment(routed, second), [routed.job.id]);
    const detail = await completedFulfillments(routed, 2);
    expect(detail.fulfillments.map((fulfillment: { trackingNumbers: string[] }) => fulfillment.trackingNumbers)).toEqual([['ONCE-1'], ['ONCE-2']]);
    expect(sandbox.fulfillmentsFor(routed.reseller.shopDomain)).toHaveLength(2);
  });

  it.for(['platform_b', 'custom'] as const)('applies a redelivered %s fulfillment once, also when deliveries race', async (supplierPlatform, { service, sandbox, routedOrder, deliverFulfillment, completedFulfillments }) => {
    const routed = await routedOrder({ resellerPlatform: 'custom', supplierPlatform });
    const payload = fulfillmentOf(routed, { trackingNumbers: ['RACE-1'], trackingUrls: ['https://track.example/RACE-1'], company: 'Royal Mail' });
    const webhookId = `wh-${uniqueSuffix()}`;
    const responses = await Promise.all(Array.from({ length: 5 }, () => deliverFulfillment(routed, payload, { webhookId })));
    for (const response of responses) expectReceived(response, [routed.job.id]);
    await completedFulfillments(routed, 1);
    expectReceived(await deliverFulfillment(routed, payload, { webhookId }), [routed.job.id]);

    const rows = await fulfillmentRows(service.databaseUrl, routed.reseller.id);
    expect(rows).toHaveLength(1);
    expect(await queueMessageCount(service.databaseUrl, 'fulfillment.propagate', [rows[0]!.id])).toBe(1);
    expect(sandbox.fulfillmentsFor(routed.reseller.shopDomain)).toHaveLength(1);
  });
});

describe('reseller platform failures', () => {
  it.for([
    { name: 'two server errors', faults: { failNext: 2 }, statuses: [500, 500, 201], replayed: false },
    // The first call is carried out but its answer is lost: only the Idempotency-Key prevents a second fulfillment.
    { name: 'a lost answer, then a server error', faults: { acceptThenDropNext: 1, failNext: 1 }, statuses: [null, 500, 201], replayed: true },
  ] as const)('retries after $name and still adds one fulfillment', async ({ faults, statuses, replayed }, { sandbox, routedOrder, deliverFulfillment, completedFulfillments }) => {
    const routed = await routedOrder({ resellerPlatform: 'platform_a', supplierPlatform: 'custom' });
    sandbox.setFaults(routed.reseller.shopDomain, faults);
    expectReceived(await deliverFulfillment(routed, fulfillmentOf(routed, { trackingNumbers: ['RETRY-1'] })), [routed.job.id]);

    const detail = await completedFulfillments(routed, 1);
    expect(detail.fulfillments[0]).toMatchObject({ status: 'completed', attempts: 3, errorMessage: null, trackingNumbers: ['RETRY-1'] });
    const calls = sandbox.requestsFor(routed.reseller.shopDomain).filter((call) => call.method === 'POST');
    expect(calls.map((call) => call.status)).toEqual(statuses);
    expect(calls.at(-1)!.idempotentReplay).toBe(replayed);
    const [sent, ...more] = sandbox.fulfillmentsFor(routed.reseller.shopDomain);
    expect(more).toHaveLength(0);
    expect(detail.fulfillments[0].resellerFulfillmentId).toBe(String(sent!.id));
  });
});

describe('sender identification', () => {
  it('finds the source store whose secret verifies among records sharing a supplier domain', async ({ sandbox, routedOrder, deliverFulfillment, completedFulfillments, expectNoFulfillment }) => {
    const sharedDomain = `shared-supplier-${uniqueSuffix()}.example.com`;
    const first = await routedOrder({ resellerPlatform: 'platform_a', supplierPlatform: 'platform_a', supplierDomain: sharedDomain });
    const second = await routedOrder({ resellerPlatform: 'platform_b', supplierPlatform: 'platform_a', supplierDomain: sharedDomain });
    expect(first.supplierSecret).not.toBe(second.supplierSecret);
    expect(sandbox.ordersFor(sharedDomain)).toHaveLength(2);

    // Signed with the second record's secret: goes to the second reseller only.
    const forSecond = fulfillmentOf(second, { fulfillmentId: nextFulfillmentId++, trackingNumbers: ['SHARED-2'] });
    expectReceived(await deliverFulfillment(second, forSecond), [second.job.id]);
    await completedFulfillments(second, 1);
    expect(sandbox.fulfillmentsFor(second.reseller.shopDomain).map((sent) => sent.body)).toEqual([
      { tracking_number: 'SHARED-2' },
    ]);

    // The first reseller's order, signed with the second record's secret, is not an order of that record.
    const crossed = fulfillmentOf(first, { fulfillmentId: nextFulfillmentId++, trackingNumbers: ['CROSSED'] });
    expectReceived(await deliverFulfillment(first, crossed, { secret: second.supplierSecret }), []);
    await expectNoFulfillment(first);

    // Signed with its own secret, it goes through.
    expectReceived(await deliverFulfillment(first, crossed), [first.job.id]);
    await completedFulfillments(first, 1);
    expect(sandbox.fulfillmentsFor(first.reseller.shopDomain)).toHaveLength(1);
    expect(sandbox.fulfillmentsFor(second.reseller.shopDomain)).toHaveLength(1);
  });

  it('finds the job by the supplier order when records sharing a domain also share the secret', async ({ sandbox, routedOrder, deliverFulfillment, completedFulfillments }) => {
    const sharedDomain = `shared-supplier-${uniqueSuffix()}.example.com`;
    const secret = `whsec_shared_${uniqueSuffix()}`;
    const first = await routedOrder({ resellerPlatform: 'custom', supplierPlatform: 'custom', supplierDomain: sharedDomain, supplierSecret: secret });
    const second = await routedOrder({ resellerPlatform: 'custom', supplierPlatform: 'custom', supplierDomain: sharedDomain, supplierSecret: secret });
    expectReceived(await deliverFulfillment(second, fulfillmentOf(second, { trackingNumbers: ['S-2'] })), [second.job.id]);
    expectReceived(await deliverFulfillment(first, fulfillmentOf(first, { trackingNumbers: ['S-1'] })), [first.job.id]);
    await completedFulfillments(first, 1);
    await completedFulfillments(second, 1);
    expect(sandbox.fulfillmentsFor(first.reseller.shopDomain).map((sent) => sent.body)).toMatchObject([{ trackingNumbers: ['S-1'] }]);
    expect(sandbox.fulfillmentsFor(second.reseller.shopDomain).map((sent) => sent.body)).toMatchObject([{ trackingNumbers: ['S-2'] }]);
  });
  it("reads a delivery with each sender's own platform when records sharing a domain and its secret disagree on the platform", async ({ service, api, sandbox, routedOrder, deliverFulfillment, completedFulfillments }) => {
    const sharedDomain = `shared-supplier-${uniqueSuffix()}.example.com`;
    const secret = `whsec_shared_${uniqueSuffix()}`;
    // Another tenant added the supplier with the platform mistaken, and its record verified a delivery first.
    const other = await registerUser(api);
    const otherReseller = await createResellerStore(api, other.token);
    await createSourceStore(api, other.token, otherReseller.id, { platform: 'platform_a', shopDomain: sharedDomain, webhookSecret: secret });
    const proofBody = JSON.stringify(buildFulfillmentPayload('platform_a', { orderId: 987_000_001, fulfillmentId: nextFulfillmentId++, trackingNumbers: ['PROOF'] }));
    const proof = await postRawWebhook(service.url, FULFILLMENTS_PATH, { body: proofBody, secret, shopDomain: sharedDomain, topic: 'fulfillments/create' });
    expect(proof.status, JSON.stringify(proof.body)).toBe(200);

    const routed = await routedOrder({ resellerPlatform: 'custom', supplierPlatform: 'custom', supplierDomain: sharedDomain, supplierSecret: secret });
    const response = await deliverFulfillment(routed, fulfillmentOf(routed, { trackingNumbers: ['MIXED-1'] }));
    expectReceived(response, [routed.job.id]);
    await completedFulfillments(routed, 1);
    expect(sandbox.fulfillmentsFor(routed.reseller.shopDomain).map((sent) => sent.body)).toMatchObject([{ trackingNumbers: ['MIXED-1'] }]);
  });
});

describe('rejected and ignored deliveries', () => {
  let routed: Routed;
  it.beforeAll(async ({ routedOrder }) => {
    routed = await routedOrder({ resellerPlatform: 'platform_a', supplierPlatform: 'platform_a' });
  });

  it('acknowledges a fulfillment for an unknown order and creates nothing', async ({ deliverFulfillment, expectNoFulfillment }) => {
    const unknown = buildFulfillmentPayload('platform_a', { orderId: 987_654_321, fulfillmentId: nextFulfillmentId++, trackingNumbers: ['NOPE'] });
    expectReceived(await deliverFulfillment(routed, unknown), []);
    await expectNoFulfillment(routed);
  });

  it('answers 401 invalid_signature to unverifiable fulfillments and creates nothing', async ({ service, expectNoFulfillment }) => {
    const payload = fulfillmentOf(routed, { fulfillmentId: nextFulfillmentId++, trackingNumbers: ['FORGED'] });
    const body = JSON.stringify(payload);
    const base = { body, secret: routed.supplierSecret, shopDomain: routed.supplier.shopDomain, topic: 'fulfillments/create' };
    const tampered = JSON.stringify({ ...payload, tracking_number: 'EVIL', tracking_numbers: ['EVIL'] });
    const cases: Record<string, Partial<typeof base> & { signedBody?: string }> = {
      'forged signature (wrong secret)': { secret: `whsec_${uniqueSuffix()}` },
      'tampered body': { body: tampered, signedBody: body },
      'missing signature': { secret: undefined },
      'missing shop domain': { shopDomain: undefined },
      'unknown shop domain': { shopDomain: `nobody-${uniqueSuffix()}.example.com` },
      "the reseller store's domain and secret": { shopDomain: routed.reseller.shopDomain, secret: routed.resellerSecret },
    };
    const bodies: unknown[] = [];
    for (const [name, delivery] of Object.entries(cases)) {
      const response = await postRawWebhook(service.url, FULFILLMENTS_PATH, { ...base, ...delivery });
      expect(response.status, name).toBe(401);
      expectError(response, 401, 'invalid_signature');
      bodies.push(withoutRequestId(response.body));
    }
    for (const other of bodies) expect(other).toEqual(bodies[0]);
    await expectNoFulfillment(routed);
  });

  it('stops accepting fulfillments from a deleted source store', async ({ api, routedOrder, deliverFulfillment, expectNoFulfillment }) => {
    const other = await routedOrder({ resellerPlatform: 'platform_a', supplierPlatform: 'custom' });
    const deleted = await api.delete(`/v1/reseller_stores/${other.reseller.id}/source_stores/${other.supplier.id}`, { token: other.user.token });
    expect(deleted.status).toBe(204);
    const response = await deliverFulfillment(other, fulfillmentOf(other));
    expect(response.status).toBe(401);
    expect((response.body as { error: { code: string } }).error.code).toBe('invalid_signature');
    await expectNoFulfillment(other);
  });

  it('answers 400 to a verified body that is not a fulfillment, and 200 ignored to another topic', async ({ service, expectNoFulfillment }) => {
    const base = { secret: routed.supplierSecret, shopDomain: routed.supplier.shopDomain, topic: 'fulfillments/create' };
    const payload = fulfillmentOf(routed, { fulfillmentId: nextFulfillmentId++ });
    const invalid: Record<string, { body: string; param?: string; topic?: string }> = {
      'an object that is no fulfillment': { body: '{"foo":1}' },
      'no order id': { body: JSON.stringify({ ...payload, order_id: undefined }), param: 'order_id' },
      'an order id beyond exact JSON integers': { body: JSON.stringify(payload).replace(/"order_id":\d+,/, '"order_id":12345678901234567890,'), param: 'order_id' },
      'not JSON': { body: 'tracking=1', param: 'body' },
    };
    expect(invalid['an order id beyond exact JSON integers']!.body).toContain('"order_id":12345678901234567890,');
    for (const [name, { body, param, topic }] of Object.entries(invalid)) {
      const response = await postRawWebhook(service.url, FULFILLMENTS_PATH, { ...base, body, ...(topic && { topic }) });
      expect(response.status, `${name}: ${JSON.stringify(response.body)}`).toBe(400);
      expectError(response, 400, 'validation_failed', param);
    }
    expectError(await postRawWebhook(service.url, FULFILLMENTS_PATH, { ...base, body: JSON.stringify(payload), contentType: 'text/plain' }), 415, 'unsupported_media_type');
    // Issue 23: a topic the endpoint does not act on is answered 200 ignored (it used to be a 400).
    const otherTopic = await postRawWebhook(service.url, FULFILLMENTS_PATH, { ...base, body: JSON.stringify(payload), topic: 'orders/create' });
    expect(otherTopic.status).toBe(200);
    expect(otherTopic.body).toEqual({ received: true, ignored: true, request_id: expect.any(String) });
    await expectNoFulfillment(routed);
  });

  it('leaves the order routing untouched', async ({ service, sandbox }) => {
    // The deliveries above neither moved the job nor placed anything more on the supplier.
    const [job] = await syncJobRows(service.databaseUrl, routed.reseller.id);
    expect(job).toMatchObject({ id: routed.job.id, status: 'completed', attempts: 1 });
    expect(sandbox.ordersFor(routed.supplier.shopDomain)).toHaveLength(1);
  });
});
