/**
 * The operator console in headless Chromium against the real service, database, queue and sandbox
 * (as test/browser/console.test.ts does): it never tells an operator more than it knows.
 * - a bulk retry that stops at its cap of calls says that more jobs remain, not only how many it
 *   retried;
 * - a divergence list cut at its cap per store says that more exist, on the first view and on the
 *   store's page;
 * - an answer requested before an action (retry, dismiss) and landing after it does not bring back
 *   what the action changed, nor do the store counts;
 * - a bulk retry that fails partway says how many jobs it retried, then the error;
 * - stores and suppliers cut at their cap of 500 say that more exist.
 */
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../sandbox/server.ts';
import type { TestUser } from '../support/factories.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { addSupplier, createJob, lineOf, openShop, seedResellerOrder, waitForJob } from '../support/sync-jobs.ts';
import { launchChromium, openLoopbackTab, signIn as signInAt, view } from './chromium.ts';

let sandbox: Sandbox;
let service: TestService;
let browser: Browser;

beforeAll(async () => {
  sandbox = await startSandbox();
  service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await sandbox?.close();
});

const openTab = () => openLoopbackTab(browser);
const signIn = (page: Page, user: TestUser) => signInAt(page, user, service.url);
const json = (body: unknown) => ({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });

/** A store with a supplier down and one of its jobs dead (a `job_dead` divergence on the list). */
async function storeWithDeadJob(name: string) {
  const shop = await openShop(service.api, { name });
  const supplier = await addSupplier(service.api, shop, { name: `${name} Supply`, vendorTag: name.replaceAll(' ', '') });
  sandbox.setFaults(supplier.shopDomain, { alwaysFail: true, status: 503 });
  const created = await createJob(service.api, shop.user.token, supplier.id, seedResellerOrder(sandbox, shop, [lineOf(name.replaceAll(' ', ''))]));
  const job = await waitForJob(service.api, shop.user.token, created.id, (j) => j.status === 'dead', 30_000, 'dead');
  await waitFor(async () => {
    const list = await service.api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
    return (list.body.data as any[]).some((d) => d.syncJobId === job.id && d.type === 'job_dead');
  }, 10_000, 'job_dead divergence');
  return { shop, supplier, job };
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Holds the next GET matching `matches`: its answer is read from the service now (the state before
 * whatever the test does next) and handed to the page only on `release()`.
 */
async function holdNextAnswer(page: Page, glob: string, matches: (url: URL) => boolean) {
  let held = false;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  await page.route(glob, async (route: Route) => {
    const url = new URL(route.request().url());
    if (held || route.request().method() !== 'GET' || !matches(url)) return route.fallback();
    held = true;
    const response = await route.fetch();
    await released;
    await route.fulfill({ response });
  });
  return { isHeld: () => held, release };
}

describe('the operator console tells the operator what it does not know (review 20)', () => {
  it('says that more jobs remain when a bulk retry stops at its cap of calls', async () => {
    const shop = await openShop(service.api, { name: 'Bulk Barn' });
    const { context, page, problems } = await openTab();
    await signIn(page, shop.user);
    // Every call retries 1,000 jobs and more match: as with more than the cap's worth of dead jobs.
    let calls = 0;
    await page.route('**/v1/sync_jobs/bulk_retry', (route) => {
      calls += 1;
      return route.fulfill(json({ retried: 1000, syncJobIds: [], has_more: true, request_id: 'req_test' }));
    });
    await page.evaluate(`location.hash = '#/jobs'`);
    await view(page, 'Jobs');
    await page.getByRole('button', { name: 'Retry matching jobs' }).click();
    const status = page.getByRole('status');
    await expect.poll(() => status.textContent(), { timeout: 20_000 }).toMatch(/more dead jobs remain/i);
    const cap = await page.evaluate(`import('/console/actions.js').then((module) => module.BULK_RETRY_MAX_CALLS)`);
    expect(cap).toBeGreaterThan(0);
    expect(calls).toBe(cap);
    await expect(status.textContent()).resolves.toContain(`Retried ${(1000 * (cap as number)).toLocaleString('en')} dead jobs`);
    await expect(status.textContent()).resolves.toMatch(/Run it again/);
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('says that more divergences exist than it lists when a store has more than its cap', async () => {
    const shop = await openShop(service.api, { name: 'Crowded Shop' });
    const { context, page, problems } = await openTab();
    // Every page of the store's divergences is full, and more follow.
    let pages = 0;
    await page.route(`**/v1/reseller_stores/${shop.reseller.id}/divergences?*`, (route) => {
      if (route.request().method() !== 'GET') return route.fallback();
      pages += 1;
      const after = new URL(route.request().url()).searchParams.get('starting_after');
      const offset = after ? Number(after.replace('div_stub_', '')) + 1 : 0;
      const data = Array.from({ length: 100 }, (_, i) => ({
        id: `div_stub_${offset + i}`, object: 'divergence', type: 'stale', status: 'open', resellerStoreId: shop.reseller.id,
        syncJobId: `job_stub_${offset + i}`, externalOrderId: String(5000 + offset + i), subjectId: `job_stub_${offset + i}`,
        since: new Date(Date.now() - (offset + i) * 60_000).toISOString(), detail: null, resolvedAt: null, dismissedAt: null,
      }));
      return route.fulfill(json({ object: 'list', data, has_more: true, request_id: 'req_test' }));
    });
    await signIn(page, shop.user);
    const note = page.getByText(/only the newest 500 open divergences of each store are loaded/i);
    await note.waitFor({ timeout: 10_000 });
    await expect(note.textContent()).resolves.toContain('Crowded Shop');
    await page.getByRole('heading', { level: 2, name: 'Divergences (500 shown; more exist)' }).waitFor();
    expect(pages).toBeGreaterThanOrEqual(5);

    // The store's page lists the same 500, and says the same.
    await page.evaluate(`location.hash = ${JSON.stringify(`#/stores/${shop.reseller.id}`)}`);
    await view(page, 'Crowded Shop');
    await page.getByRole('heading', { level: 2, name: 'Divergences (500 shown; more exist)' }).waitFor({ timeout: 10_000 });
    await page.getByText(/only the newest 500 open divergences of each store are loaded/i).waitFor();
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('does not bring back a retried job when a poll answer requested before the retry lands after it', async () => {
    const { shop, supplier, job } = await storeWithDeadJob('Late Poll');
    const { context, page, problems } = await openTab();
    await signIn(page, shop.user);
    const jobs = page.getByRole('table', { name: 'Dead and failed sync jobs of all stores, most recent failure first' });
    const retry = jobs.getByRole('button', { name: `Retry the job for order ${job.externalOrderId}` });
    await retry.waitFor({ timeout: 10_000 });

    // A poll asks for the dead jobs (the job is still dead) and its answer is slow.
    const poll = await holdNextAnswer(page, '**/v1/sync_jobs?*', (url) => url.searchParams.get('status') === 'dead');
    await expect.poll(poll.isHeld, { timeout: 10_000 }).toBe(true);
    sandbox.clearFaults(supplier.shopDomain);
    await retry.click();
    await page.getByRole('status').getByText(`Job for order ${job.externalOrderId} retried; it is pending again.`).waitFor();
    await page.getByText('No dead or failed jobs. Everything is moving.').waitFor({ timeout: 10_000 });

    // The poll's answer lands now: it is older than the retry and must not show the job dead again.
    poll.release();
    await page.waitForTimeout(1_000);
    await expect(retry.count()).resolves.toBe(0);
    await expect(page.getByText('No dead or failed jobs. Everything is moving.').count()).resolves.toBe(1);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it("does not bring back a dismissed divergence on the store's page when a load requested before the dismiss lands after it", async () => {
    const { shop } = await storeWithDeadJob('Late List');
    const { context, page, problems } = await openTab();
    await signIn(page, shop.user);
    await page.evaluate(`location.hash = ${JSON.stringify(`#/stores/${shop.reseller.id}`)}`);
    await view(page, 'Late List');
    const list = page.getByRole('table', { name: 'Open divergences, newest first' });
    const dismiss = list.getByRole('button', { name: 'Dismiss the divergence Order not placed (job dead)' });
    await dismiss.waitFor({ timeout: 10_000 });

    // The operator refreshes; the list's answer (the entry still open) is slow, and they dismiss meanwhile.
    const load = await holdNextAnswer(page, `**/v1/reseller_stores/${shop.reseller.id}/divergences?*`, () => true);
    await page.getByRole('button', { name: 'Refresh', exact: true }).click();
    await expect.poll(load.isHeld, { timeout: 10_000 }).toBe(true);
    await dismiss.click();
    await page.getByRole('status').getByText('Divergence dismissed: Order not placed (job dead).').waitFor();
    await expect.poll(() => dismiss.count(), { timeout: 10_000 }).toBe(0);

    load.release();
    await page.waitForTimeout(1_000);
    await expect(dismiss.count()).resolves.toBe(0);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);
});


describe('the operator console tells the operator what it does not know (review 21)', () => {
  it("does not show a store's old counts when a stats answer requested before a retry lands after it", async () => {
    const { shop, supplier, job } = await storeWithDeadJob('Late Stats');
    const { context, page, problems } = await openTab();
    await signIn(page, shop.user);
    const option = page.locator('#store-picker option', { hasText: 'Late Stats' });
    await expect.poll(() => option.textContent(), { timeout: 10_000 }).toBe('Late Stats · 1 dead');
    const retry = page.getByRole('button', { name: `Retry the job for order ${job.externalOrderId}` });
    await retry.waitFor({ timeout: 10_000 });

    // A poll asks for the store's counts (the job still dead) and its answer is slow.
    const poll = await holdNextAnswer(page, `**/v1/reseller_stores/${shop.reseller.id}/stats`, () => true);
    await expect.poll(poll.isHeld, { timeout: 10_000 }).toBe(true);
    sandbox.clearFaults(supplier.shopDomain);
    await retry.click();
    await page.getByRole('status').getByText(`Job for order ${job.externalOrderId} retried; it is pending again.`).waitFor();
    // The counts are asked again at once after the retry.
    await expect.poll(() => option.textContent(), { timeout: 4_000 }).not.toContain('dead');

    // Later polls stall, so only the held answer can change the counts now: it is older than the retry.
    const stalled: Route[] = [];
    await page.route(`**/v1/reseller_stores/${shop.reseller.id}/stats`, (route) => void stalled.push(route));
    poll.release();
    await page.waitForTimeout(1_000);
    await expect(option.textContent()).resolves.not.toContain('dead');
    for (const route of stalled) await route.abort().catch(() => {});
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it('says how many jobs a bulk retry retried before a call failed, then the error', async () => {
    const shop = await openShop(service.api, { name: 'Half Done' });
    const { context, page, problems } = await openTab();
    await signIn(page, shop.user);
    // Two calls retry 1,000 jobs each and more match; the third fails on the service's side.
    let calls = 0;
    await page.route('**/v1/sync_jobs/bulk_retry', (route) => {
      calls += 1;
      if (calls < 3) return route.fulfill(json({ retried: 1000, syncJobIds: [], has_more: true, request_id: 'req_test' }));
      return route.fulfill({ status: 500, contentType: 'application/json', body: JSON.stringify({ error: { code: 'internal_error', message: 'Internal error' }, request_id: 'req_half' }) });
    });
    await page.evaluate(`location.hash = '#/jobs'`);
    await view(page, 'Jobs');
    await page.getByRole('button', { name: 'Retry matching jobs' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor({ timeout: 10_000 });
    await expect(alert.textContent()).resolves.toBe(
      'Retried 2,000 dead jobs; they are pending again. Could not retry the rest: the service had a problem on its side. If it keeps happening, quote reference req_half.',
    );
    expect(calls).toBe(3);
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('says that only the first 500 stores are listed when there are more, and counts no dead jobs it cannot see', async () => {
    // Its own store is past the first 500 listed: its dead job is in none of the listed stores' counts.
    const { shop, job } = await storeWithDeadJob('Many Stores');
    const { context, page, problems } = await openTab();
    // Every page of the stores is full, and more follow; the stub stores have nothing in them.
    await page.route('**/v1/reseller_stores?*', (route) => {
      if (route.request().method() !== 'GET') return route.fallback();
      const after = new URL(route.request().url()).searchParams.get('starting_after');
      const offset = after ? Number(after.replace('rs_stub_', '')) + 1 : 0;
      const data = Array.from({ length: 100 }, (_, i) => ({ id: `rs_stub_${offset + i}`, object: 'reseller_store', name: `Stub Store ${offset + i}` }));
      return route.fulfill(json({ object: 'list', data, has_more: true, request_id: 'req_test' }));
    });
    await page.route('**/v1/reseller_stores/rs_stub_*/**', (route) =>
      /\/stats$/.test(new URL(route.request().url()).pathname)
        ? route.fulfill({ status: 404, contentType: 'application/json', body: JSON.stringify({ error: { code: 'not_found', message: 'Not found' } }) })
        : route.fulfill(json({ object: 'list', data: [], has_more: false, request_id: 'req_test' })),
    );
    await signIn(page, shop.user);
    const picker = page.locator('#store-picker');
    await expect.poll(() => picker.locator('option').count(), { timeout: 10_000 }).toBeGreaterThan(500);
    await expect(picker.locator('option').last().textContent()).resolves.toBe('First 500 stores shown; more exist');
    await page.getByText('First 500 stores shown; more exist.').waitFor();
    // The bulk retry covers every store: not a count of the listed ones (0 here), nor disabled by it.
    await page.getByText('Counted in the first 500 stores only').waitFor();
    const retryAll = page.getByRole('button', { name: 'Retry all dead jobs', exact: true });
    await expect.poll(() => retryAll.isEnabled()).toBe(true);
    await retryAll.click();
    await expect.poll(() => page.getByRole('status').first().textContent(), { timeout: 10_000 }).toContain('Retried 1 dead job');
    const retried = await service.api.get(`/v1/events?type=sync_job.retried&reseller_store_id=${shop.reseller.id}`, { token: shop.user.token });
    expect(retried.body.data.map((event: { data: { object: { id: string } } }) => event.data.object.id)).toEqual([job.id]);

    await page.evaluate(`location.hash = '#/jobs'`);
    await view(page, 'Jobs');
    await expect(page.locator('#filter-store option').last().textContent()).resolves.toBe('First 500 stores shown; more exist');
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it("says that only the first 500 suppliers of a store are listed when it has more", async () => {
    const shop = await openShop(service.api, { name: 'Many Suppliers' });
    const { context, page, problems } = await openTab();
    await page.route(`**/v1/reseller_stores/${shop.reseller.id}/source_stores?*`, (route) => {
      if (route.request().method() !== 'GET') return route.fallback();
      const after = new URL(route.request().url()).searchParams.get('starting_after');
      const offset = after ? Number(after.replace('ss_stub_', '')) + 1 : 0;
      const data = Array.from({ length: 100 }, (_, i) => ({
        id: `ss_stub_${offset + i}`, object: 'source_store', name: `Supplier ${offset + i}`, resellerStoreId: shop.reseller.id,
        vendorTag: `v${offset + i}`, shopDomain: `s${offset + i}.example`,
      }));
      return route.fulfill(json({ object: 'list', data, has_more: true, request_id: 'req_test' }));
    });
    await signIn(page, shop.user);
    await page.evaluate(`location.hash = ${JSON.stringify(`#/jobs?store=${shop.reseller.id}`)}`);
    await view(page, 'Jobs');
    for (const id of ['#filter-supplier', '#bulk-supplier']) {
      const options = page.locator(`${id} option`);
      await expect.poll(() => options.count(), { timeout: 10_000 }).toBeGreaterThan(500);
      await expect(options.last().textContent()).resolves.toBe('First 500 suppliers shown; more exist');
    }
    // Across all stores, the store whose suppliers are cut is named.
    await page.evaluate(`location.hash = '#/jobs'`);
    await expect.poll(() => page.locator('#bulk-supplier option').last().textContent(), { timeout: 10_000 }).toBe('First 500 suppliers of Many Suppliers shown; more exist');
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);
});
