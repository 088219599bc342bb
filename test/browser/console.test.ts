/**
 * The operator console (GET /console) in headless Chromium (Debian's /usr/bin/chromium, driven by
 * playwright-core), against the real service, database, queue and sandbox platform: an operator
 * signs in, finds a dead job, reads its timeline, retries it and watches it complete, bulk-retries
 * a store's dead jobs, survives an expired access token, and signs out. axe-core checks the pages
 * (no serious or critical violation) and screenshots at 1280 and 390 px are written to
 * test/browser/screenshots/ (git-ignored) for a reviewer to look at.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../sandbox/server.ts';
import type { TestUser } from '../support/factories.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { addSupplier, createJob, lineOf, openShop, seedResellerOrder, waitForJob, type Shop, type Supplier } from '../support/sync-jobs.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);
const SCREENSHOTS = path.join(import.meta.dirname, 'screenshots');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

let sandbox: Sandbox;
let service: TestService;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  sandbox = await startSandbox();
  service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS, headless: true, chromiumSandbox: false });
});
afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await sandbox?.close();
});

/** A browser tab that may only reach the service, and that records what went wrong in it. */
async function openTab(viewport = DESKTOP): Promise<{ context: BrowserContext; page: Page; problems: string[]; requests: string[] }> {
  const context = await browser.newContext({ viewport });
  const problems: string[] = [];
  const requests: string[] = [];
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    requests.push(`${route.request().method()} ${url.pathname}`);
    if (LOOPBACK_HOSTS.has(url.hostname)) return route.continue();
    problems.push(`request left loopback: ${url.href}`);
    return route.abort('blockedbyclient');
  });
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    // A Content-Security-Policy refusal is reported on the console only.
    if (message.type() === 'error' && !/status of 40[14]/.test(message.text())) problems.push(`console error: ${message.text()}`);
  });
  return { context, page, problems, requests };
}

/** axe-core's serious and critical violations on the page as it is now. */
async function accessibilityViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's Content-Security-Policy does not restrict.
  await page.evaluate(AXE_SOURCE);
  // A string, run in the page: this file is type-checked without the DOM's types.
  const violations = await page.evaluate<{ id: string; impact: string; help: string; targets: string[] }[]>(`
    axe.run(document, { resultTypes: ['violations'] }).then((result) =>
      result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) })))
  `);
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.targets.join(', ')}`);
}

/** The whole page, or what the viewport shows (a modal dialog is fixed to the viewport). */
const screenshot = (page: Page, name: string, fullPage = true) => page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage });

async function signIn(page: Page, user: TestUser): Promise<void> {
  await page.goto(`${service.url}/console`);
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  // By keyboard: Enter in the form submits it.
  await page.getByLabel('Password').press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Operator console' }).waitFor();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

interface Scene {
  shop: Shop;
  flaky: Supplier;
  outage: Supplier;
  deadJob: any;
  outageJobs: any[];
}

/** A store with a supplier that failed one order for good and another whose outage killed two orders. */
async function deadJobsScene(): Promise<Scene> {
  const shop = await openShop(service.api, { name: 'Corner Shop' });
  const flaky = await addSupplier(service.api, shop, { name: 'Acme Supplies', vendorTag: 'Acme' });
  const outage = await addSupplier(service.api, shop, { name: 'Bolt Wholesale', vendorTag: 'Bolt' });
  sandbox.setFaults(flaky.shopDomain, { alwaysFail: true, status: 503 });
  sandbox.setFaults(outage.shopDomain, { alwaysFail: true, status: 500 });
  const jobFor = (supplier: Supplier) => createJob(service.api, shop.user.token, supplier.id, seedResellerOrder(sandbox, shop, [lineOf(supplier.vendorTag)]));
  const created = await Promise.all([jobFor(flaky), jobFor(outage), jobFor(outage)]);
  const [deadJob, ...outageJobs] = await Promise.all(
    created.map((job) => waitForJob(service.api, shop.user.token, job.id, (j) => j.status === 'dead', 20_000, 'dead')),
  );
  return { shop, flaky, outage, deadJob, outageJobs };
}

describe('the operator console', () => {
  it('serves the page and its assets from the service, with a strict Content-Security-Policy', async () => {
    const page = await fetch(`${service.url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    for (const [asset, type] of [
      ['app.js', /javascript/],
      ['console.css', /^text\/css/],
      ['assets/preact-htm.js', /javascript/],
      ['assets/pico.min.css', /^text\/css/],
    ] as const) {
      const response = await fetch(`${service.url}/console/${asset}`);
      expect(response.status, asset).toBe(200);
      expect(response.headers.get('content-type'), asset).toMatch(type);
    }
    for (const forbidden of ['/console/assets/package.json', '/console/routes.ts', '/console/../package.json', '/console/public/app.js']) {
      expect((await fetch(`${service.url}${forbidden}`)).status, forbidden).toBe(404);
    }
  });

  it('signs in, shows a dead job and its timeline, retries it to completion, bulk-retries the rest, and signs out', async () => {
    const scene = await deadJobsScene();
    const { context, page, problems, requests } = await openTab();

    // A wrong password is explained in plain words.
    await page.goto(`${service.url}/console`);
    expect(await accessibilityViolations(page), 'sign-in page').toEqual([]);
    await screenshot(page, 'sign-in-1280');
    await page.getByLabel('Email').fill(scene.shop.user.email);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('That email and password do not match an account. Check them and try again.');

    await signIn(page, scene.shop.user);
    await page.getByRole('heading', { level: 2, name: 'Corner Shop' }).waitFor();
    const counts = page.getByRole('table', { name: 'Counts by status' });
    await expect(counts.getByRole('row', { name: /dead/ }).textContent()).resolves.toMatch(/dead\s*3\s*0/);
    await expect(counts.getByRole('row', { name: /skipped/ }).textContent()).resolves.toMatch(/skipped\s*—\s*0/);
    const problemsTable = page.getByRole('table', { name: /Dead and failed sync jobs/ });
    const row = problemsTable.getByRole('row', { name: new RegExp(`#${scene.deadJob.externalOrderId}`) });
    await expect(row.textContent()).resolves.toContain('Acme Supplies');
    await expect(row.textContent()).resolves.toContain('503');
    expect(await accessibilityViolations(page), 'console page').toEqual([]);
    await screenshot(page, 'console-1280');

    // The timeline, opened and closed by keyboard: focus moves into the dialog and back.
    const timelineButton = page.getByRole('button', { name: `Timeline of the job for order ${scene.deadJob.externalOrderId}` });
    await timelineButton.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: `Job for order #${scene.deadJob.externalOrderId}` });
    await dialog.waitFor();
    const attempts = dialog.getByRole('table', { name: 'Attempts of the job, oldest first' });
    await attempts.waitFor();
    const attemptRows = attempts.locator('tbody tr');
    await expect(attemptRows.count()).resolves.toBe(4);
    await expect(attemptRows.nth(0).textContent()).resolves.toMatch(/First attempt.*failed.*503/);
    await expect(attemptRows.nth(3).textContent()).resolves.toMatch(/Automatic retry.*failed.*503/);
    expect(await page.evaluate<string>('document.activeElement && document.activeElement.id')).toBe('job-heading');
    expect(await accessibilityViolations(page), 'timeline dialog').toEqual([]);
    await screenshot(page, 'timeline-1280', false);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await timelineButton.evaluate((button) => button === button.ownerDocument.activeElement)).toBe(true);

    // Retry from the timeline once the supplier is back, and watch it complete.
    sandbox.clearFaults(scene.flaky.shopDomain);
    await timelineButton.click();
    await dialog.getByRole('button', { name: 'Retry this job' }).click();
    await dialog.locator('.facts .badge-completed').waitFor({ timeout: 20_000 });
    await expect(attemptRows.count()).resolves.toBe(5);
    await expect(attemptRows.nth(4).textContent()).resolves.toMatch(/Manual retry.*succeeded.*201/);
    await expect(page.getByRole('status').first().textContent()).resolves.toContain(`Job for order ${scene.deadJob.externalOrderId} retried`);
    await dialog.getByRole('button', { name: 'Close', exact: true }).click();

    // Bulk retry of the store's other dead jobs.
    sandbox.clearFaults(scene.outage.shopDomain);
    await page.getByRole('button', { name: 'Retry all dead jobs (2)' }).click();
    await page.getByText('Retried 2 dead jobs; they are pending again.').waitFor();
    for (const job of scene.outageJobs) await waitForJob(service.api, scene.shop.user.token, job.id, (j) => j.status === 'completed', 20_000, 'completed');
    await page.getByText('No dead or failed jobs. Everything is moving.').waitFor({ timeout: 15_000 });
    await expect.poll(() => counts.getByRole('row', { name: /completed/ }).textContent(), { timeout: 15_000 }).toMatch(/completed\s*3\s*0/);

    // Reconciliation: started, and once it has run the store's overview says when.
    await expect(page.locator('.stats dd').nth(2).textContent()).resolves.toBe('never');
    await page.getByRole('button', { name: 'Run reconciliation' }).click();
    await page.getByText(/^Reconciliation started/).waitFor();
    await expect.poll(() => page.locator('.stats dd').nth(2).textContent(), { timeout: 20_000 }).toMatch(/ ago$/);

    // Sign out: back to the form, and a reload does not resume the session.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You are signed out.').waitFor();
    await page.getByLabel('Email').waitFor();
    await page.reload();
    await page.getByLabel('Email').waitFor();
    await expect(page.getByRole('button', { name: 'Sign out' }).count()).resolves.toBe(0);

    expect(requests.filter((request) => request.startsWith('GET /console/assets/')).sort()).toEqual(
      expect.arrayContaining(['GET /console/assets/pico.min.css', 'GET /console/assets/preact-htm.js']),
    );
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);

  it('renews an expired access token through the refresh cookie and carries on', async () => {
    const shop = await openShop(service.api, { name: 'Night Shop' });
    const { context, page, problems, requests } = await openTab();
    await signIn(page, shop.user);
    await page.getByRole('heading', { level: 2, name: 'Night Shop' }).waitFor();

    // The next stats call meets an access token the API no longer accepts, as it would after 15 minutes.
    let expired = 0;
    await page.route('**/v1/reseller_stores/*/stats', async (route) => {
      if (expired++ > 0) return route.fallback();
      await route.fulfill({
        status: 401,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'unauthorized', message: 'The access token is not valid or has expired.' }, request_id: 'req_test' }),
      });
    });
    const refreshesBefore = requests.filter((r) => r === 'POST /v1/auth/refresh').length;
    await page.getByRole('button', { name: 'Refresh', exact: true }).click();
    await expect.poll(() => expired, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    expect(requests.filter((r) => r === 'POST /v1/auth/refresh').length).toBe(refreshesBefore + 1);
    await expect(page.getByRole('button', { name: 'Sign out' }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole('alert').count()).resolves.toBe(0);

    // When the session itself is gone (revoked elsewhere), the operator is asked to sign in again.
    await context.clearCookies();
    await page.unroute('**/v1/reseller_stores/*/stats');
    await page.route('**/v1/reseller_stores/*/stats', (route) =>
      route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unauthorized', message: 'expired' }, request_id: 'req_test' }) }),
    );
    await page.getByRole('button', { name: 'Refresh', exact: true }).click();
    await page.getByText('Your session has ended. Sign in again.').waitFor();
    await page.getByLabel('Email').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('is usable on a 390 px phone: no sideways scrolling, jobs as cards, no serious accessibility violation', async () => {
    const scene = await deadJobsScene();
    const { context, page, problems } = await openTab(PHONE);
    await signIn(page, scene.shop.user);
    await page.getByRole('heading', { level: 2, name: 'Corner Shop' }).waitFor();
    await page.getByRole('button', { name: `Timeline of the job for order ${scene.deadJob.externalOrderId}` }).waitFor();
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
    expect(await accessibilityViolations(page), 'console on a phone').toEqual([]);
    await screenshot(page, 'console-390');

    await page.getByRole('button', { name: `Timeline of the job for order ${scene.deadJob.externalOrderId}` }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('table', { name: 'Attempts of the job, oldest first' }).waitFor();
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(PHONE.width);
    expect(await accessibilityViolations(page), 'timeline on a phone').toEqual([]);
    await screenshot(page, 'timeline-390', false);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);
});
