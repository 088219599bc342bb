/**
 * Review 10, flow control: one supplier store reached through several store records with the same
 * credential (a supplier selling under two brands, so two vendor tags of one reseller store; or a
 * merchant's two storefronts sourcing from one supplier) is still one platform bucket
 * (platforms.md: "The bucket is the store's, whoever calls"). Its calls must stay within the
 * store's limit, not the limit times the number of records.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sendWebhook, startSandbox, type Sandbox } from './sandbox/server.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { startTestService, type TestService } from './support/service.ts';
import { lineOf, newOrderId, orderPosts } from './support/sync-jobs.ts';
import { ORDERS_PATH } from './support/webhooks.ts';
import { waitFor } from './support/wait.ts';

/** The supplier's own limit in the sandbox, and the service's pacing of platform_a stores: the same. */
const LIMIT = { perSecond: 5, burst: 10 };

let sandbox: Sandbox;
let service: TestService;
beforeAll(async () => {
  sandbox = await startSandbox();
  service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, PLATFORM_PACING: `platform_a=${LIMIT.perSecond}:${LIMIT.burst}` });
}, 60_000);
afterAll(async () => {
  await service?.stop();
  await sandbox?.close();
});

it('two source-store records of one supplier with the same token share its rate limit: no 429 storm during a sale', async () => {
  const user = await registerUser(service.api);
  const webhookSecret = `whsec_${randomBytes(12).toString('hex')}`;
  const reseller = await createResellerStore(service.api, user.token, { platform: 'platform_a', webhookSecret });
  const shopDomain = `brands-${randomBytes(4).toString('hex')}.example.com`;
  const accessToken = `shpat_${randomBytes(12).toString('hex')}`;
  // One supplier, two brands: two records (one per vendor tag), one store, one token.
  for (const vendorTag of ['BrandOne', 'BrandTwo']) {
    await createSourceStore(service.api, user.token, reseller.id, { platform: 'platform_a', shopDomain, accessToken, vendorTag });
  }
  sandbox.registerStore(shopDomain, { accessToken });
  sandbox.setFaults(shopDomain, { rateLimit: LIMIT });

  // A sale: 30 orders, each with a line of each brand (two jobs to the one supplier store).
  const jobIds: string[] = [];
  for (let i = 0; i < 30; i += 6) {
    const answers = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const payload = sandbox.buildOrderPayload('platform_a', { id: Number(newOrderId()), lines: [lineOf('BrandOne'), lineOf('BrandTwo')] });
        const answer = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: reseller.shopDomain, secret: webhookSecret, topic: 'orders/create', payload });
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        return (answer.body as { syncJobIds: string[] }).syncJobIds;
      }),
    );
    jobIds.push(...answers.flat());
  }
  expect(jobIds).toHaveLength(60);

  await waitFor(
    async () => {
      const rows = await queryRows<{ status: string }>(service.databaseUrl, 'select status from sync_jobs where id = any($1::text[])', [jobIds]);
      return rows.every((row) => row.status === 'completed' || row.status === 'dead');
    },
    60_000,
    'every job settled',
  );
  const posts = orderPosts(sandbox, shopDomain);
  const refused = posts.filter((post) => post.status === 429);
  // As for one record (test/flow-control.test.ts): the store's limit is kept, so at most a stray 429.
  expect(refused.length, `${refused.length} of ${posts.length} order POSTs answered 429`).toBeLessThanOrEqual(2);
  const rows = await queryRows<{ status: string; attempts: number }>(service.databaseUrl, 'select status, attempts from sync_jobs where id = any($1::text[])', [jobIds]);
  expect(rows.filter((row) => row.status !== 'completed')).toEqual([]);
  expect(sandbox.ordersFor(shopDomain)).toHaveLength(60);
}, 90_000);

it("a supplier whose token cannot be decrypted fails its own job's attempt, not its batch-mates' take", async () => {
  const user = await registerUser(service.api);
  const webhookSecret = `whsec_${randomBytes(12).toString('hex')}`;
  const reseller = await createResellerStore(service.api, user.token, { platform: 'platform_a', webhookSecret });
  const broken = await createSourceStore(service.api, user.token, reseller.id, { platform: 'custom', vendorTag: 'BrokenCo' });
  const fine = await createSourceStore(service.api, user.token, reseller.id, { platform: 'custom', vendorTag: 'FineCo' });
  // A sealed token bound to another record (AES-GCM with the record id as associated data) does not open.
  await queryRows(
    service.databaseUrl,
    'update source_stores set access_token_encrypted = (select access_token_encrypted from source_stores where id = $2) where id = $1',
    [broken.id, fine.id],
  );
  const payload = sandbox.buildOrderPayload('platform_a', { id: Number(newOrderId()), lines: [lineOf('BrokenCo'), lineOf('FineCo')] });
  const answer = await sendWebhook({ targetUrl: `${service.url}${ORDERS_PATH}`, shopDomain: reseller.shopDomain, secret: webhookSecret, topic: 'orders/create', payload });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const jobIds = (answer.body as { syncJobIds: string[] }).syncJobIds;
  expect(jobIds).toHaveLength(2);
  const statusOf = async () =>
    new Map(
      (await queryRows<{ source_store_id: string; status: string; attempts: number }>(service.databaseUrl, 'select source_store_id, status, attempts from sync_jobs where id = any($1::text[])', [jobIds])).map(
        (row) => [row.source_store_id, row],
      ),
    );
  await waitFor(async () => (await statusOf()).get(fine.id)?.status === 'completed', 10_000, "the other supplier's job completed");
  await waitFor(async () => ((await statusOf()).get(broken.id)?.attempts ?? 0) >= 1, 10_000, "the broken supplier's job attempted");
  expect(sandbox.ordersFor(fine.shopDomain)).toHaveLength(1);
}, 30_000);
