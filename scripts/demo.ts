/**
 * `npm run demo`: the product end to end, on free ports, in a throw-away data folder. Starts the
 * service (embedded PostgreSQL) and the sandbox platform, then plays a reseller's day: connect a
 * storefront, add two suppliers, receive a signed order, watch both suppliers get their part,
 * push a supplier's tracking back to the customer's order; then a supplier goes down, its job dies,
 * is retried by hand once the supplier is back, and is placed; then the customer cancels that order
 * and the supplier's order is cancelled too.
 *
 * `npm run demo -- --keep` leaves everything running with its data afterwards, and prints how to
 * open the console on it (Ctrl-C stops; the data folder is kept).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config/index.ts';
import { deleteDataDir } from '../src/db/embedded.ts';
import { startService } from '../src/server.ts';
import { createLogger } from '../src/shared/logger.ts';
import { buildFulfillmentPayload, sendWebhook, startSandbox } from '../test/sandbox/server.ts';

const keep = process.argv.includes('--keep');
const dataDir = mkdtempSync(path.join(tmpdir(), 'ors-demo-'));
const PASSWORD = 'correct horse battery';
const step = (n: number, text: string) => console.log(`\n\x1b[1m${n}. ${text}\x1b[0m`);
const show = (label: string, value: unknown) => console.log(`   ${label}: ${typeof value === 'string' ? value : JSON.stringify(value)}`);

const sandbox = await startSandbox();
const config = loadConfig({ ...process.env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', PLATFORM_BASE_URL: sandbox.baseUrlTemplate, SYNC_RETRY_BASE_DELAY_MS: '500', LOG_LEVEL: 'error' });
const service = await startService(config, createLogger(config.logLevel));
const base = service.url!;

// The demo reads loosely typed JSON; the contract is checked by the test suite, not here.
async function call(method: string, route: string, body?: unknown, token?: string): Promise<any> {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...(token && { authorization: `Bearer ${token}` }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = response.status === 204 ? null : await response.json();
  if (!response.ok) throw new Error(`${method} ${route} answered ${response.status}: ${JSON.stringify(json)}`);
  return json;
}

async function until<T>(what: string, probe: () => Promise<T | null>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

let exitCode = 0;
try {
  console.log(`Service at ${base}, sandbox platform at ${sandbox.url}, data in ${dataDir}`);

  step(1, 'Register a reseller');
  const { accessToken: token } = await call('POST', '/v1/auth/register', { email: 'demo@reseller.example', password: PASSWORD });
  show('access token', `${token.slice(0, 24)}…`);

  step(2, 'Connect the reseller storefront (platform_a)');
  const shop = await call('POST', '/v1/reseller_stores', { name: 'Demo Boutique', platform: 'platform_a', shopDomain: 'demo-boutique.example', accessToken: 'shpat_demo_reseller', webhookSecret: 'whsec_demo_reseller' }, token);
  show('reseller store', { id: shop.id, shopDomain: shop.shopDomain });

  step(3, 'Add two suppliers on different platforms');
  const anvils = await call('POST', `/v1/reseller_stores/${shop.id}/source_stores`, { name: 'Acme Anvils', platform: 'platform_b', shopDomain: 'acme-anvils.example', accessToken: 'wc_demo_acme', webhookSecret: 'whsec_demo_acme', vendorTag: 'Acme', pricingMode: 'percentage', pricingConfig: { type: 'percentage', value: 25 } }, token);
  const bolts = await call('POST', `/v1/reseller_stores/${shop.id}/source_stores`, { name: 'Bolt Brothers', platform: 'custom', shopDomain: 'bolt-brothers.example', accessToken: 'custom_demo_bolt', webhookSecret: 'whsec_demo_bolt', vendorTag: 'Bolt Bros', pricingMode: 'field_rules', pricingConfig: { type: 'field_rules', rules: [{ field: 'price', op: 'multiply', value: 0.7 }, { field: 'sku', op: 'prefix', value: 'BB-' }] } }, token);
  show('Acme Anvils', `${anvils.platform}, vendor "${anvils.vendorTag}", supplier price = retail / 1.25`);
  show('Bolt Brothers', `${bolts.platform}, vendor "${bolts.vendorTag}", supplier price = retail × 0.7, sku prefixed BB-`);

  step(4, 'The storefront posts a signed orders/create webhook');
  const order = sandbox.buildOrderPayload('platform_a', {
    id: 450789469,
    currency: 'EUR',
    email: 'customer@example.com',
    lines: [
      { sku: 'ANV-1', title: 'Anvil, 20 kg', vendor: 'Acme', quantity: 1, price: '125.00' },
      { sku: 'BLT-8', title: 'Bolt M8 (box)', vendor: 'Bolt Bros', quantity: 3, price: '10.00' },
    ],
  });
  sandbox.seedOrder(shop.shopDomain, 'platform_a', order);
  const delivered = await sendWebhook({ targetUrl: `${base}/v1/orders/webhook`, shopDomain: shop.shopDomain, secret: 'whsec_demo_reseller', topic: 'orders/create', payload: order });
  show(`answer ${delivered.status}`, delivered.body);

  step(5, 'Both sync jobs complete; each supplier received only its lines, priced by its rules');
  const jobs = await until('both jobs completed', async () => {
    const list = await call('GET', `/v1/sync_jobs?reseller_store_id=${shop.id}`, undefined, token);
    return list.data.length === 2 && list.data.every((job: { status: string }) => job.status === 'completed') ? list.data : null;
  });
  for (const job of jobs) show(job.id, `${job.status} after ${job.attempts} attempt(s), supplier order ${job.sourceOrderId}`);
  show('Acme Anvils received', sandbox.ordersFor(anvils.shopDomain).map((o) => (o.body as { line_items: unknown[] }).line_items));
  show('Bolt Brothers received', sandbox.ordersFor(bolts.shopDomain).map((o) => (o.body as { lines: unknown[] }).lines));

  step(6, 'Acme Anvils ships and posts a signed fulfillments/create webhook');
  const anvilJob = jobs.find((job: { sourceStoreId: string }) => job.sourceStoreId === anvils.id);
  const fulfillment = buildFulfillmentPayload('platform_b', { orderId: anvilJob.sourceOrderId, trackingNumbers: ['1Z999AA10123456784'], trackingUrls: ['https://track.example/1Z999AA10123456784'], company: 'UPS' });
  const shipped = await sendWebhook({ targetUrl: `${base}/v1/fulfillments/webhook`, shopDomain: anvils.shopDomain, secret: 'whsec_demo_acme', topic: 'fulfillments/create', payload: fulfillment });
  show(`answer ${shipped.status}`, shipped.body);

  step(7, 'The tracking reaches the customer\'s order on the storefront');
  const pushed = await until('tracking on the reseller order', async () => sandbox.fulfillmentsFor(shop.shopDomain)[0] ?? null);
  show('storefront fulfillment', pushed.body);
  const detail = await until('fulfillment recorded', async () => {
    const job = await call('GET', `/v1/sync_jobs/${anvilJob.id}`, undefined, token);
    return job.fulfillments[0]?.status === 'completed' ? job : null;
  });
  show('job fulfillments', detail.fulfillments.map((f: { status: string; trackingNumbers: string[] }) => `${f.status}: ${f.trackingNumbers.join(', ')}`));

  step(8, 'Everything important is in the audit log');
  const audit = await call('GET', `/v1/audit_log?reseller_store_id=${shop.id}&limit=20`, undefined, token);
  for (const entry of [...audit.data].reverse()) show(entry.createdAt, `${entry.action} ${entry.resourceId}`);

  step(9, 'Bolt Brothers goes down (every call answers 503) while a second order arrives');
  sandbox.setFaults(bolts.shopDomain, { alwaysFail: true, status: 503 });
  const second = sandbox.buildOrderPayload('platform_a', {
    id: 450789470,
    currency: 'EUR',
    email: 'customer@example.com',
    lines: [{ sku: 'BLT-10', title: 'Bolt M10 (box)', vendor: 'Bolt Bros', quantity: 2, price: '12.00' }],
  });
  sandbox.seedOrder(shop.shopDomain, 'platform_a', second);
  await sendWebhook({ targetUrl: `${base}/v1/orders/webhook`, shopDomain: shop.shopDomain, secret: 'whsec_demo_reseller', topic: 'orders/create', payload: second });
  const dead = await until('the job to die after its automatic retries', async () => {
    const list = await call('GET', `/v1/sync_jobs?reseller_store_id=${shop.id}&status=dead`, undefined, token);
    return list.data[0] ?? null;
  });
  const timeline = await call('GET', `/v1/sync_jobs/${dead.id}/attempts`, undefined, token);
  for (const attempt of timeline.data) show(`attempt ${attempt.attempt} (${attempt.trigger})`, `${attempt.outcome}, platform answered ${attempt.platformStatus}`);
  show(dead.id, `${dead.status}: ${dead.errorMessage}`);

  step(10, 'Bolt Brothers is back; the operator retries the dead job');
  sandbox.clearFaults(bolts.shopDomain);
  await call('POST', `/v1/sync_jobs/${dead.id}/retry`, undefined, token);
  const placed = await until('the retried job to complete', async () => {
    const job = await call('GET', `/v1/sync_jobs/${dead.id}`, undefined, token);
    return job.status === 'completed' ? job : null;
  });
  show(placed.id, `${placed.status} after ${placed.attempts} attempts, supplier order ${placed.sourceOrderId}`);

  step(11, 'The customer cancels that order on the storefront; the supplier has not shipped, so it is cancelled there too');
  const cancelled = await sendWebhook({
    targetUrl: `${base}/v1/orders/webhook`,
    shopDomain: shop.shopDomain,
    secret: 'whsec_demo_reseller',
    topic: 'orders/cancelled',
    payload: { ...second, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' },
  });
  show(`answer ${cancelled.status}`, cancelled.body);
  const withCancellation = await until('the cancellation to reach the supplier', async () => {
    const job = await call('GET', `/v1/sync_jobs/${dead.id}`, undefined, token);
    return job.cancellations?.[0]?.status === 'completed' ? job : null;
  });
  const [cancellation] = withCancellation.cancellations;
  show(cancellation.id, `${cancellation.status}, outcome ${cancellation.outcome}, lines ${JSON.stringify(cancellation.lines)}`);

  console.log('\n\x1b[32mDemo finished: orders routed, tracking pushed back, a dead job retried and placed, a cancellation carried to the supplier.\x1b[0m');
} catch (error) {
  console.error(`\n\x1b[31mDemo failed: ${error instanceof Error ? error.message : String(error)}\x1b[0m`);
  exitCode = 1;
}
if (keep && exitCode === 0) {
  console.log(`\nStill running, with the demo's data. Open ${base}/console and sign in as demo@reseller.example / ${PASSWORD}`);
  console.log(`(the API reference is at ${base}/docs). Ctrl-C stops; the data stays in ${dataDir}, and`);
  console.log(`DATA_DIR=${dataDir} npm start serves it again (with no sandbox behind it, calls to the stores fail).`);
  await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
}
await service.stop();
await sandbox.close();
if (!keep) deleteDataDir(dataDir);
process.exit(exitCode);
