import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildFulfillmentPayload, sendWebhook, startSandbox, type Sandbox } from './sandbox/server.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { startTestService, type TestService } from './support/service.ts';
import { waitFor } from './support/wait.ts';

let sandbox: Sandbox;
let service: TestService;
beforeAll(async () => {
  sandbox = await startSandbox();
  service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate });
});
afterAll(async () => {
  await service?.stop();
  await sandbox?.close();
});

it('routes an order and brings tracking back', async () => {
  const user = await registerUser(service.api);
  const reseller = await createResellerStore(service.api, user.token, { webhookSecret: 'whsec_reseller' });
  const a = await createSourceStore(service.api, user.token, reseller.id, { vendorTag: 'Acme', platform: 'platform_a', webhookSecret: 'whsec_a' });
  const b = await createSourceStore(service.api, user.token, reseller.id, { vendorTag: 'Bolt', platform: 'platform_b' });
  const payload = sandbox.buildOrderPayload('platform_a', { id: 777, lines: [
    { sku: 'A1', title: 'Anvil', vendor: 'Acme', quantity: 1, price: '10.00' },
    { sku: 'B1', title: 'Bolt', vendor: 'bolt', quantity: 3, price: '2.00' },
    { sku: 'C1', title: 'Cog', vendor: 'Nobody', quantity: 1, price: '1.00' },
  ] });
  sandbox.seedOrder(reseller.shopDomain, 'platform_a', payload);
  const url = `${service.url}/v1/orders/webhook`;
  const first = await sendWebhook({ targetUrl: url, shopDomain: reseller.shopDomain, secret: 'whsec_reseller', topic: 'orders/create', payload, webhookId: 'w1' });
  expect(first.status, JSON.stringify(first.body)).toBe(200);
  expect((first.body as any).syncJobIds).toHaveLength(2);
  const again = await sendWebhook({ targetUrl: url, shopDomain: reseller.shopDomain, secret: 'whsec_reseller', topic: 'orders/create', payload, webhookId: 'w1' });
  expect((again.body as any).syncJobIds).toEqual((first.body as any).syncJobIds);
  const forged = await sendWebhook({ targetUrl: url, shopDomain: reseller.shopDomain, secret: 'wrong', topic: 'orders/create', payload });
  expect(forged.status).toBe(401);
  await waitFor(async () => sandbox.ordersFor(a.shopDomain).length === 1 && sandbox.ordersFor(b.shopDomain).length === 1);
  const jobA = await waitFor(async () => {
    const list = await service.api.get(`/v1/sync_jobs?source_store_id=${a.id}`, { token: user.token });
    return list.body.data[0]?.status === 'completed' ? list.body.data[0] : null;
  });
  const ff = buildFulfillmentPayload('platform_a', { orderId: jobA.sourceOrderId, fulfillmentId: 9, trackingNumbers: ['TRK1'], company: 'UPS' });
  const fr = await sendWebhook({ targetUrl: `${service.url}/v1/fulfillments/webhook`, shopDomain: a.shopDomain, secret: 'whsec_a', topic: 'fulfillments/create', payload: ff });
  expect(fr.status, JSON.stringify(fr.body)).toBe(200);
  await waitFor(async () => sandbox.fulfillmentsFor(reseller.shopDomain).length === 1);
  const detail = await waitFor(async () => {
    const job = await service.api.get(`/v1/sync_jobs/${jobA.id}`, { token: user.token });
    return job.body.fulfillments[0]?.status === 'completed' ? job.body : null;
  });
  expect(detail.fulfillments[0].trackingNumbers).toEqual(['TRK1']);
  const audit = await service.api.get(`/v1/audit_log?action=order.lines_unmatched`, { token: user.token });
  expect(audit.body.data).toHaveLength(1);
});
