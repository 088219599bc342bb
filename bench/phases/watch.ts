/**
 * Watch: the divergence watch's pass over a reseller store with 10,000 open placed orders spread
 * over four suppliers on the three platforms, of which 100 changed at their suppliers (shipped or
 * cancelled) with no webhook. The jobs are seeded in the database and the supplier orders in the
 * sandbox (routing 10,000 orders through the API would measure routing, not the watch); every
 * store's watermark is an hour old, the untouched orders last changed two days ago.
 *   watch.pass_s: from the pass's request until all 100 are recorded (tracking queued, cancellation listed)
 *   watch.platform_reads: list and get calls the pass made (its own count, checked against the sandbox's log)
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { buildOrderPayload } from '../../test/sandbox/payloads.ts';
import { round } from '../common.ts';
import { api, withClient, type Bench } from '../harness.ts';
import { PLAN, QUICK, type Results } from '../settings.ts';

type Platform = 'platform_a' | 'platform_b' | 'custom';

const SUPPLIERS: { platform: Platform; vendorTag: string }[] = [
  { platform: 'platform_a', vendorTag: 'Watch A' },
  { platform: 'platform_b', vendorTag: 'Watch B' },
  { platform: 'custom', vendorTag: 'Watch C' },
  { platform: 'custom', vendorTag: 'Watch D' },
];
const ORDERS = QUICK ? 2_000 : 10_000;
const CHANGED = 100;
const TWO_DAYS_MS = 2 * 86_400_000;

const updatedField = { platform_a: 'updated_at', platform_b: 'date_modified_gmt', custom: 'updatedAt' } as const;
const referenceOf = (platform: Platform, jobId: string) =>
  platform === 'platform_a' ? { note_attributes: [{ name: 'sync_reference', value: jobId }] } : platform === 'platform_b' ? { meta_data: [{ key: 'sync_reference', value: jobId }] } : { reference: jobId };

export async function watchPhase(bench: Bench): Promise<Results> {
  bench.log(`watch: ${ORDERS} open placed orders over ${SUPPLIERS.length} suppliers, ${CHANGED} shipped or cancelled with no webhook, one pass`);
  const url = await bench.createDatabase('bench_watch');
  const service = await bench.startServiceProcess('watch', url, { DIVERGENCE_INTERVAL_MS: '0', RECONCILE_INTERVAL_MS: '0', PLATFORM_PACING: PLAN.pacing });
  const base = service.url!;
  const suffix = randomBytes(3).toString('hex');
  const resellerDomain = `watch-storefront-${suffix}.example`;
  const { accessToken: token } = await api<{ accessToken: string }>(base, 'POST', '/v1/auth/register', { email: `watch-${suffix}@reseller.example`, password: 'correct horse battery staple' });
  const reseller = await api<{ id: string; ownerId: string }>(base, 'POST', '/v1/reseller_stores', {
    name: 'Watch Storefront', platform: 'platform_a', shopDomain: resellerDomain, accessToken: 'shpat_watch', webhookSecret: 'whsec_watch_storefront',
  }, token);
  const suppliers: { platform: Platform; vendorTag: string; id: string; shopDomain: string }[] = [];
  for (const [index, supplier] of SUPPLIERS.entries()) {
    const shopDomain = `watch-supplier-${index}-${suffix}.example`;
    const created = await api<{ id: string }>(base, 'POST', `/v1/reseller_stores/${reseller.id}/source_stores`, {
      name: supplier.vendorTag, platform: supplier.platform, shopDomain, accessToken: `token_${shopDomain}`, webhookSecret: `whsec_${shopDomain}`,
      vendorTag: supplier.vendorTag, pricingMode: 'percentage', pricingConfig: { type: 'percentage', value: 25 },
    }, token);
    suppliers.push({ ...supplier, id: created.id, shopDomain });
  }

  // 10,000 placed jobs, two days old (not stale), each with its supplier order.
  const placedAt = new Date(Date.now() - TWO_DAYS_MS);
  const jobs = Array.from({ length: ORDERS }, (_, i) => {
    const supplier = suppliers[i % suppliers.length]!;
    const number = 7_000_000 + i;
    return { id: `job_watch${String(i).padStart(24, '0')}`, supplier, externalOrderId: String(number), sourceOrderId: supplier.platform === 'custom' ? `ord_w${number}` : String(number) };
  });
  await withClient(url, async (c) => {
    const rows = jobs.map((job) => ({ id: job.id, source_store_id: job.supplier.id, external_order_id: job.externalOrderId, source_order_id: job.sourceOrderId }));
    await c.query(
      `insert into sync_jobs (id, owner_id, reseller_store_id, source_store_id, external_order_id, origin, status, attempts, retries_left, source_order_id,
         error_message, completed_at, failed_at, dead_at, "order", queue_message_id, version, created_at, updated_at)
       select r.id, $2, $3, r.source_store_id, r.external_order_id, 'webhook', 'completed', 1, 3, r.source_order_id, null, $4, null, null, null, null, 1, $4, $4
       from jsonb_to_recordset($1::jsonb) as r(id text, source_store_id text, external_order_id text, source_order_id text)`,
      [JSON.stringify(rows), reseller.ownerId, reseller.id, placedAt],
    );
    await c.query(`insert into watch_watermarks (store_id, watermark, updated_at) select unnest($1::text[]), now() - interval '1 hour', now()`, [[reseller.id, ...suppliers.map((s) => s.id)]]);
    await c.query('vacuum analyze sync_jobs');
  });
  const seedStarted = Date.now();
  for (let i = 0; i < jobs.length; i += 200) {
    await Promise.all(jobs.slice(i, i + 200).map((job) => {
      const payload = buildOrderPayload(job.supplier.platform, {
        id: job.supplier.platform === 'custom' ? job.sourceOrderId : Number(job.sourceOrderId),
        createdAt: placedAt.toISOString(),
        lines: [{ sku: 'W-1', title: 'Watched', vendor: job.supplier.shopDomain, quantity: 1, price: '12.00' }],
      });
      const updated = job.supplier.platform === 'platform_b' ? placedAt.toISOString().slice(0, 19) : placedAt.toISOString();
      const order = { ...payload, ...referenceOf(job.supplier.platform, job.id), [updatedField[job.supplier.platform]]: updated, ...(job.supplier.platform === 'platform_b' && { status: 'processing' }) };
      return bench.sandboxControl('POST', `/stores/${encodeURIComponent(job.supplier.shopDomain)}/orders`, { platform: job.supplier.platform, order });
    }));
  }
  bench.log(`  seeded ${ORDERS} jobs and supplier orders (${round((Date.now() - seedStarted) / 1000)} s for the sandbox)`);

  // 100 change at their suppliers, spread over the four: 3 of every 5 shipped, the others cancelled.
  const stride = Math.floor(ORDERS / CHANGED);
  const changed = Array.from({ length: CHANGED }, (_, k) => jobs[k * stride + (k % suppliers.length)]!);
  const shipped = changed.filter((_, i) => i % 5 < 3);
  const cancelled = changed.filter((_, i) => i % 5 >= 3);
  for (const job of shipped) {
    await bench.sandboxControl('POST', `/stores/${encodeURIComponent(job.supplier.shopDomain)}/orders/${encodeURIComponent(job.sourceOrderId)}/ship`, { platform: job.supplier.platform, trackingNumbers: [`WT-${job.externalOrderId}`] });
  }
  for (const job of cancelled) {
    await bench.sandboxControl('POST', `/stores/${encodeURIComponent(job.supplier.shopDomain)}/orders/${encodeURIComponent(job.sourceOrderId)}/cancel`, { platform: job.supplier.platform });
  }
  // The storefront orders their tracking goes to.
  for (const job of shipped) {
    const payload = buildOrderPayload('platform_a', { id: Number(job.externalOrderId), createdAt: placedAt.toISOString(), lines: [{ sku: 'W-1', title: 'Watched', vendor: job.supplier.vendorTag, quantity: 1, price: '15.00' }] });
    await bench.sandboxControl('POST', `/stores/${encodeURIComponent(resellerDomain)}/orders`, { platform: 'platform_a', order: { ...payload, updated_at: placedAt.toISOString() } });
  }
  const requestsBefore = await sandboxGets(bench, suppliers.map((s) => s.shopDomain));

  const started = Date.now();
  const { divergenceCheckId } = await api<{ divergenceCheckId: string }>(base, 'POST', `/v1/reseller_stores/${reseller.id}/divergence_checks`, undefined, token);
  const repairedAt = await withClient(url, async (c) => {
    for (;;) {
      const { rows } = await c.query(
        `select (select count(*) from fulfillments where reseller_store_id = $1) as tracked,
                (select count(*) from divergences where reseller_store_id = $1 and type = 'supplier_cancelled') as cancelled`,
        [reseller.id],
      );
      if (Number(rows[0].tracked) >= shipped.length && Number(rows[0].cancelled) >= cancelled.length) return Date.now();
      if (Date.now() - started > 120_000) throw new Error(`watch: after 120 s only ${rows[0].tracked} tracked and ${rows[0].cancelled} cancellations recorded`);
      await delay(20);
    }
  });
  const pass = await withClient(url, async (c) => {
    for (;;) {
      const { rows } = await c.query('select status, orders_seen, repairs, platform_reads, error, extract(epoch from finished_at - started_at) as seconds from watch_passes where id = $1', [divergenceCheckId]);
      if (rows[0]?.status !== 'running') return rows[0] as { status: string; orders_seen: number; repairs: number; platform_reads: number; error: string | null; seconds: string };
      await delay(50);
    }
  });
  const pushedAt = await withClient(url, async (c) => {
    for (;;) {
      const { rows } = await c.query(`select count(*) from fulfillments where reseller_store_id = $1 and status = 'completed'`, [reseller.id]);
      if (Number(rows[0].count) >= shipped.length || Date.now() - started > 120_000) return Date.now();
      await delay(50);
    }
  });
  const requestsAfter = await sandboxGets(bench, suppliers.map((s) => s.shopDomain));
  await service.stop();
  const sandboxReads = requestsAfter - requestsBefore;
  const passSeconds = (repairedAt - started) / 1000;
  bench.log(`  pass ${pass.status}: ${pass.orders_seen} orders listed, ${pass.repairs} repairs, ${pass.platform_reads} platform reads (suppliers' sandbox log: ${sandboxReads} GETs), ${round(Number(pass.seconds), 2)} s in all${pass.error ? `; error: ${pass.error}` : ''}`);
  bench.log(`  all ${CHANGED} recorded ${round(passSeconds, 2)} s after the request (${shipped.length} shipped, ${cancelled.length} cancelled); tracking pushed to the storefront after ${round((pushedAt - started) / 1000, 2)} s`);
  if (pass.status !== 'succeeded') bench.notes.push(`watch: the pass ended ${pass.status}: ${pass.error}`);
  return {
    'watch.pass_s': round(passSeconds, 2),
    'watch.platform_reads': pass.platform_reads,
    'watch.orders_listed': pass.orders_seen,
    'watch.tracking_pushed_s': round((pushedAt - started) / 1000, 2),
  };
}

/** GETs the sandbox logged for these stores so far. */
async function sandboxGets(bench: Bench, shopDomains: string[]): Promise<number> {
  let count = 0;
  for (const domain of shopDomains) {
    const requests = await bench.sandboxControl<{ method: string }[]>('GET', `/stores/${encodeURIComponent(domain)}/requests`);
    count += requests.filter((request) => request.method === 'GET').length;
  }
  return count;
}
