/**
 * The operator console in headless Chromium against the real service, database, queue and sandbox
 * (as test/browser/console.test.ts does): it never tells an operator more than it knows.
 * - a bulk retry that stops at its cap of calls says that more jobs remain, not only how many it
 *   retried;
 * - a divergence list cut at its cap per store says that more exist, on the first view and on the
 *   store's page.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../sandbox/server.ts';
import type { TestUser } from '../support/factories.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { openShop } from '../support/sync-jobs.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

let sandbox: Sandbox;
let service: TestService;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
  sandbox = await startSandbox();
  service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS, headless: true, chromiumSandbox: false });
});
afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await sandbox?.close();
});

async function openTab(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const problems: string[] = [];
  const page = await context.newPage();
  await page.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (LOOPBACK_HOSTS.has(url.hostname)) return route.fallback();
    problems.push(`request left loopback: ${url.href}`);
    return route.abort('blockedbyclient');
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return { context, page, problems };
}

async function signIn(page: Page, user: TestUser): Promise<void> {
  await page.goto(`${service.url}/console`);
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByLabel('Password').press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Needs attention' }).waitFor();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

const view = (page: Page, name: string | RegExp) => page.getByRole('heading', { level: 1, name }).waitFor();
const json = (body: unknown) => ({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });

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
});
