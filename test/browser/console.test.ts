/**
 * The operator console (GET /console) in headless Chromium (Debian's /usr/bin/chromium, driven by
 * playwright-core), against the real service, database, queue and sandbox platform, and a real
 * webhook receiver. An operator signs in and lands on what needs attention across all stores
 * (dead jobs of an older store, a disabled webhook endpoint), picks a store by its counts, follows
 * deep links with the back button, reads a job's timeline, retries one job, selected jobs and
 * jobs by supplier, searches by order number, job id and supplier, pages through jobs and the
 * audit log, retries a webhook delivery, survives an expired access token and signs out. The
 * divergence list (real supplier cancellations, one dismissed), a failed job's next retry, a failed
 * cancellation retried by hand and the attempts' request/response excerpts all come from the real
 * flows, on a second service whose retries are ten minutes apart. axe-core
 * checks every view (no serious or critical violation) and screenshots at 1280 and 390 px are
 * written to test/browser/screenshots/ (git-ignored) for a reviewer to look at.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFulfillmentPayload, sendWebhook, startSandbox, type Sandbox } from '../sandbox/server.ts';
import type { TestUser } from '../support/factories.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { addSupplier, createJob, lineOf, openShop, seedResellerOrder, waitForJob, type Shop, type Supplier } from '../support/sync-jobs.ts';
import { waitFor } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';
import { DESKTOP, keepToLoopback, launchChromium, signIn as signInAt, view } from './chromium.ts';

const SCREENSHOTS = path.join(import.meta.dirname, 'screenshots');
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const PHONE = { width: 390, height: 844 };
/** `25 Nov 18:07:31`: the console's one-line dates. */
const COMPACT_DATE = /^\d{1,2} [A-Z][a-z]{2}( \d{4})? \d{2}:\d{2}:\d{2}$/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

let sandbox: Sandbox;
let service: TestService;
let receiver: WebhookReceiver;
let browser: Browser;

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  sandbox = await startSandbox();
  receiver = await WebhookReceiver.start();
  // Two quick delivery attempts, so a delivery to a receiver that is down fails within the test.
  service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, WEBHOOK_DELIVERY_SCHEDULE_MS: '0,100' });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await service?.stop();
  await receiver?.close();
  await sandbox?.close();
});

/** A browser tab that may only reach the service, and that records what went wrong in it. */
async function openTab(viewport = DESKTOP): Promise<{ context: BrowserContext; page: Page; problems: string[]; requests: string[] }> {
  const context = await browser.newContext({ viewport });
  const { problems, requests } = await keepToLoopback(context);
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    // A Content-Security-Policy refusal is reported on the console only. 401 (a token renewed) and
    // 404 (a store deleted meanwhile) are expected answers.
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

/** No sideways scrolling: the page is no wider than the viewport. */
const pageWidth = (page: Page) => page.evaluate<number>('document.documentElement.scrollWidth');

/** The whole page, written for a reviewer; it must fit the viewport's width (no sideways scrolling). */
async function screenshot(page: Page, name: string): Promise<void> {
  expect(await pageWidth(page), `${name}: page width`).toBeLessThanOrEqual(page.viewportSize()!.width);
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

const hash = (page: Page) => new URL(page.url()).hash;

/** The store picker of the top bar (views have store filters of their own). */
const storePicker = (page: Page) => page.getByRole('banner').getByLabel('Store');

const signIn = (page: Page, user: TestUser, baseUrl = service.url) => signInAt(page, user, baseUrl);

/** A view's heading, waited for. */

interface Scene {
  user: TestUser;
  harbour: Shop;
  corner: Shop;
  flaky: Supplier;
  outage: Supplier;
  crate: Supplier;
  deadJob: any;
  outageJobs: any[];
  completedJobs: any[];
  downEndpoint: { id: string; path: string };
  pausedEndpoint: { id: string; path: string };
}

/**
 * One user with two stores. The older, Harbour Goods, has a supplier that failed one order for
 * good and another whose outage killed two; the newer, Corner Shop, is healthy with twelve routed
 * orders. The user's webhook endpoints: one whose receiver is down, one disabled.
 */
async function operatorScene(): Promise<Scene> {
  const harbour = await openShop(service.api, { name: 'Harbour Goods' });
  const user = harbour.user;
  const endpoint = async (path: string) => {
    const response = await service.api.post('/v1/webhook_endpoints', {
      token: user.token,
      body: { url: receiver.url(path), enabledEvents: ['sync_job.dead', 'sync_job.completed'], description: `Receiver ${path}` },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    receiver.trust(path, [response.body.secret]);
    return { id: response.body.id as string, path };
  };
  const suffix = Math.random().toString(36).slice(2, 8);
  const downEndpoint = await endpoint(`/down-${suffix}`);
  receiver.behave(downEndpoint.path, { status: 500, body: 'receiver down' });
  const pausedEndpoint = await endpoint(`/paused-${suffix}`);
  const paused = await service.api.patch(`/v1/webhook_endpoints/${pausedEndpoint.id}`, { token: user.token, body: { status: 'disabled' } });
  expect(paused.status).toBe(200);

  const flaky = await addSupplier(service.api, harbour, { name: 'Acme Supplies', vendorTag: 'Acme' });
  const outage = await addSupplier(service.api, harbour, { name: 'Bolt Wholesale', vendorTag: 'Bolt' });
  sandbox.setFaults(flaky.shopDomain, { alwaysFail: true, status: 503 });
  sandbox.setFaults(outage.shopDomain, { alwaysFail: true, status: 500 });
  const jobFor = (shop: Shop, supplier: Supplier) => createJob(service.api, user.token, supplier.id, seedResellerOrder(sandbox, shop, [lineOf(supplier.vendorTag)]));
  const created = await Promise.all([jobFor(harbour, flaky), jobFor(harbour, outage), jobFor(harbour, outage)]);
  const [deadJob, ...outageJobs] = await Promise.all(
    created.map((job) => waitForJob(service.api, user.token, job.id, (j) => j.status === 'dead', 20_000, 'dead')),
  );

  const corner = await openShop(service.api, { name: 'Corner Shop' }, user);
  const crate = await addSupplier(service.api, corner, { name: 'Crate Co', vendorTag: 'Crate' });
  const completed: any[] = [];
  for (let i = 0; i < 12; i++) completed.push(await jobFor(corner, crate));
  const completedJobs = await Promise.all(completed.map((job) => waitForJob(service.api, user.token, job.id, (j) => j.status === 'completed', 20_000, 'completed')));
  // Deliveries of the dead jobs' events to the receiver that is down have failed by now.
  await waitFor(async () => {
    const response = await service.api.get(`/v1/webhook_endpoints/${downEndpoint.id}/deliveries?status=failed`, { token: user.token });
    return response.body.data.length >= 3 ? true : null;
  }, 15_000, 'failed deliveries');
  return { user, harbour, corner, flaky, outage, crate, deadJob, outageJobs, completedJobs, downEndpoint, pausedEndpoint };
}

describe('the operator console', () => {
  it('serves the page and its modules from the service, with a strict Content-Security-Policy', async () => {
    const page = await fetch(`${service.url}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    for (const [asset, type] of [
      ['app.js', /javascript/],
      ['lib.js', /javascript/],
      ['attention.js', /javascript/],
      ['jobs.js', /javascript/],
      ['job.js', /javascript/],
      ['webhooks.js', /javascript/],
      ['audit.js', /javascript/],
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

  let scene: Scene;

  it('opens on what needs attention across all stores, with counts in the store picker, deep links and the back button', async () => {
    scene = await operatorScene();
    const { context, page, problems, requests } = await openTab();

    // A wrong password is explained in plain words.
    await page.goto(`${service.url}/console`);
    expect(await accessibilityViolations(page), 'sign-in page').toEqual([]);
    await screenshot(page, 'sign-in-1280');
    await page.getByLabel('Email').fill(scene.user.email);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('That email and password do not match an account. Check them and try again.');

    // The first view: the older store's dead jobs, although the newest store is healthy.
    await signIn(page, scene.user);
    const problemsTable = page.getByRole('table', { name: /Dead and failed sync jobs of all stores/ });
    await expect.poll(() => problemsTable.locator('tbody tr').count(), { timeout: 10_000 }).toBe(3);
    const row = problemsTable.getByRole('row', { name: new RegExp(`order ${scene.deadJob.externalOrderId} at`) });
    await expect.poll(() => row.textContent()).toContain('Harbour Goods');
    await expect.poll(() => row.textContent()).toContain('Acme Supplies');
    await expect(row.textContent()).resolves.toContain('503');
    const disabled = page.getByRole('table', { name: 'Disabled webhook endpoints' });
    await expect(disabled.textContent()).resolves.toContain(scene.pausedEndpoint.path);
    // The dead jobs are on the reseller's to-do list too (job_dead), shown first.
    await page.getByRole('heading', { name: /^Divergences \(\d+\)/ }).waitFor();
    await expect(page.getByRole('table', { name: 'Open divergences, newest first' }).textContent()).resolves.toMatch(/Order not placed \(job dead\)/);
    const stores = page.getByRole('table', { name: /Your reseller stores/ });
    await expect.poll(() => stores.getByRole('row', { name: /Harbour Goods/ }).textContent()).toMatch(/Harbour Goods.*3\s*0\s*0\s*0/);

    // The store picker counts what needs attention in each store.
    const picker = storePicker(page);
    await expect.poll(() => picker.locator('option').allTextContents()).toEqual(['All stores', 'Corner Shop · all clear', 'Harbour Goods · 3 dead']);
    expect(await accessibilityViolations(page), 'attention view').toEqual([]);
    await screenshot(page, 'attention-1280');

    // Keyboard focus is drawn as a thick ring.
    await page.getByRole('searchbox', { name: 'Search by order number, job id or supplier' }).focus();
    await page.keyboard.press('Tab');
    const ring = await page.evaluate<{ text: string; style: string; width: string }>(`(() => {
      const style = getComputedStyle(document.activeElement);
      return { text: document.activeElement.textContent, style: style.outlineStyle, width: style.outlineWidth };
    })()`);
    expect(ring).toEqual({ text: 'Search', style: 'solid', width: '3px' });

    // Picking a store is a URL; so is every filter; Back walks them in reverse.
    await picker.selectOption({ label: 'Harbour Goods · 3 dead' });
    await view(page, 'Harbour Goods');
    expect(hash(page)).toBe(`#/stores/${scene.harbour.reseller.id}`);
    await expect(page.getByRole('table', { name: 'Counts by status' }).getByRole('row', { name: /dead/ }).textContent()).resolves.toMatch(/dead\s*3\s*0/);
    await page.getByRole('navigation', { name: 'Jobs by status' }).getByRole('link', { name: 'dead (3)' }).click();
    await view(page, 'Harbour Goods');
    await page.getByRole('heading', { level: 2, name: 'Dead jobs' }).waitFor();
    expect(hash(page)).toBe(`#/stores/${scene.harbour.reseller.id}?status=dead`);
    expect(await accessibilityViolations(page), 'store view').toEqual([]);
    await screenshot(page, 'store-1280');
    await page.goBack();
    await page.getByRole('heading', { level: 2, name: 'All jobs' }).waitFor();
    await page.goBack();
    await view(page, 'Needs attention');
    expect(hash(page)).toBe('');

    // A deep link to a job opens its page, after the session resumes from the refresh cookie.
    await page.goto(`${service.url}/console#/jobs/${scene.deadJob.id}`);
    await view(page, `Job for order #${scene.deadJob.externalOrderId}`);
    // Focus is on the view's heading, for screen readers.
    expect(await page.evaluate<string>('document.activeElement && document.activeElement.id')).toBe('view-heading');
    // The picker shows the job's store.
    await expect.poll(() => storePicker(page).inputValue()).toBe(scene.harbour.reseller.id);

    // Sign out: back to the form, and a reload does not resume the session.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You are signed out.').waitFor();
    await page.reload();
    await page.getByLabel('Email').waitFor();
    await expect(page.getByRole('button', { name: 'Sign out' }).count()).resolves.toBe(0);

    expect(requests.filter((request) => request.startsWith('GET /console/assets/')).sort()).toEqual(
      expect.arrayContaining(['GET /console/assets/pico.min.css', 'GET /console/assets/preact-htm.js']),
    );
    expect(problems).toEqual([]);
    await context.close();
  }, 180_000);

  it("shows a job's page: one-line dates, the repeated error written once, and a retry to completion", async () => {
    const { context, page, problems } = await openTab();
    await signIn(page, scene.user);
    await page.getByRole('link', { name: `Job for order ${scene.deadJob.externalOrderId} at Acme Supplies` }).click();
    await view(page, `Job for order #${scene.deadJob.externalOrderId}`);
    expect(hash(page)).toBe(`#/jobs/${scene.deadJob.id}`);

    const attempts = page.getByRole('table', { name: 'Attempts of the job, oldest first' });
    const rows = attempts.locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(4);
    await expect(rows.nth(0).textContent()).resolves.toMatch(/First attempt.*failed.*503/);
    await expect(rows.nth(3).textContent()).resolves.toMatch(/Automatic retry.*failed.*503/);
    // The same error again is not written again.
    const firstError = (await rows.nth(0).locator('td[data-label="Error"]').textContent())!.trim();
    expect(firstError).toMatch(/503/);
    for (const index of [1, 2, 3]) await expect(rows.nth(index).locator('td[data-label="Error"]').textContent()).resolves.toMatch(/^\s*same as attempt 1\s*$/);
    // Dates: compact, on one line, the exact time in the title.
    const started = rows.nth(0).locator('td[data-label="Started"] time');
    expect((await started.textContent())!).toMatch(COMPACT_DATE);
    expect(await started.getAttribute('title')).toMatch(ISO_DATE);
    const lineHeight = await started.evaluate((element) => parseFloat(element.ownerDocument.defaultView!.getComputedStyle(element).lineHeight));
    expect((await started.boundingBox())!.height).toBeLessThan(lineHeight * 1.5);
    await page.getByText('No tracking received from the supplier yet.').waitFor();
    // The job's order was never cancelled: its (real, empty) cancellations say so.
    await page.getByRole('heading', { name: 'Cancellations' }).waitFor();
    await page.getByText('The order was not cancelled.').waitFor();
    expect(await accessibilityViolations(page), 'job view').toEqual([]);
    await screenshot(page, 'job-1280');

    // The supplier is back: retry, and watch it complete.
    sandbox.clearFaults(scene.flaky.shopDomain);
    // By keyboard.
    await page.getByRole('button', { name: 'Retry this job' }).focus();
    await page.keyboard.press('Enter');
    await page.locator('.facts .badge-completed').waitFor({ timeout: 20_000 });
    await expect.poll(() => rows.count()).toBe(5);
    await expect(rows.nth(4).textContent()).resolves.toMatch(/Manual retry.*succeeded.*201/);
    await expect(page.getByRole('status').first().textContent()).resolves.toContain(`Job for order ${scene.deadJob.externalOrderId} retried`);
    await expect.poll(() => page.getByRole('table', { name: /Audit log entries of the job/ }).textContent(), { timeout: 10_000 }).toContain('sync_job.retried');
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it('searches by order number, job id and supplier, retries selected jobs and jobs by supplier, and pages through jobs', async () => {
    const { context, page, problems } = await openTab();
    await signIn(page, scene.user);
    const search = page.getByRole('searchbox', { name: 'Search by order number, job id or supplier' });
    const [first, second] = scene.outageJobs;

    // An order number: its jobs in every store.
    await search.fill(first.externalOrderId);
    await search.press('Enter');
    await view(page, `Search results for “${first.externalOrderId}”`);
    const results = page.getByRole('table', { name: 'Sync jobs, newest first' });
    await expect.poll(() => results.locator('tbody tr').count()).toBe(1);
    await expect.poll(() => results.textContent()).toContain('Bolt Wholesale');

    // A job id: straight to its page; Back returns to where the search started.
    await search.fill(second.id);
    await search.press('Enter');
    await view(page, `Job for order #${second.externalOrderId}`);
    expect(hash(page)).toBe(`#/jobs/${second.id}`);
    await page.goBack();
    await view(page, `Search results for “${first.externalOrderId}”`);

    // A supplier, by part of its name.
    await search.fill('bolt');
    await search.press('Enter');
    await view(page, 'Search results for “bolt”');
    await page.getByRole('link', { name: 'Dead jobs of Bolt Wholesale' }).click();
    await view(page, 'Jobs');
    const jobs = page.getByRole('table', { name: 'Sync jobs, newest first' });
    await expect.poll(() => jobs.locator('tbody tr').count()).toBe(2);
    expect(await accessibilityViolations(page), 'jobs view').toEqual([]);

    // The filter form shows the link's filters and narrows them; Back shows the URL's filters again.
    const filters = page.getByRole('form', { name: 'Filter the jobs' });
    await expect.poll(() => filters.getByLabel('Supplier').inputValue()).toBe(scene.outage.id);
    await filters.getByLabel('Store').selectOption({ label: 'Harbour Goods' });
    // Another store chosen: the supplier goes back to all of them.
    expect(await filters.getByLabel('Supplier').inputValue()).toBe('');
    await filters.getByLabel('Supplier').selectOption({ label: 'Bolt Wholesale' });
    await filters.getByLabel('Order number').fill(first.externalOrderId);
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => jobs.locator('tbody tr').count()).toBe(1);
    expect(hash(page)).toContain(`order=${first.externalOrderId}`);
    await page.goBack();
    await expect.poll(() => jobs.locator('tbody tr').count()).toBe(2);
    await expect.poll(() => filters.getByLabel('Order number').inputValue()).toBe('');
    expect(await filters.getByLabel('Supplier').inputValue()).toBe(scene.outage.id);

    // Retry selected: one of the two, by its checkbox.
    sandbox.clearFaults(scene.outage.shopDomain);
    // By keyboard: Space ticks the row's checkbox.
    await page.getByRole('checkbox', { name: `Select the job for order ${first.externalOrderId}` }).focus();
    await page.keyboard.press('Space');
    await page.getByRole('button', { name: 'Retry selected (1)' }).click();
    await page.getByText(`Job for order ${first.externalOrderId} retried; it is pending again.`).waitFor();
    await waitForJob(service.api, scene.user.token, first.id, (j) => j.status === 'completed', 20_000, 'completed');

    // Bulk retry by supplier, from the store's page.
    await storePicker(page).selectOption({ label: 'Harbour Goods · 1 dead' });
    await view(page, 'Harbour Goods');
    await page.getByRole('form', { name: 'Retry in bulk' }).getByLabel('Supplier').selectOption({ label: 'Bolt Wholesale' });
    await page.getByRole('button', { name: 'Retry matching jobs' }).click();
    await page.getByText('Retried 1 dead job; it is pending again.').waitFor();
    await waitForJob(service.api, scene.user.token, second.id, (j) => j.status === 'completed', 20_000, 'completed');

    // Every job by status, ten a page: the healthy store's twelve completed jobs over two pages.
    await storePicker(page).selectOption({ label: 'Corner Shop · all clear' });
    await view(page, 'Corner Shop');
    await page.getByRole('navigation', { name: 'Jobs by status' }).getByRole('link', { name: 'completed (12)' }).click();
    await page.getByRole('heading', { level: 2, name: 'Completed jobs' }).waitFor();
    await page.getByLabel('Rows per page').selectOption('10');
    const table = page.getByRole('table', { name: 'Sync jobs, newest first' });
    await expect.poll(() => table.locator('tbody tr').count()).toBe(10);
    const newest = scene.completedJobs[scene.completedJobs.length - 1];
    await expect(table.locator('tbody tr').first().textContent()).resolves.toContain(`#${newest.externalOrderId}`);
    await page.getByRole('link', { name: 'Older →' }).click();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    await expect(table.locator('tbody tr').last().textContent()).resolves.toContain(`#${scene.completedJobs[0].externalOrderId}`);
    await expect(page.getByRole('link', { name: 'Older →' }).count()).resolves.toBe(0);
    await page.getByRole('link', { name: '← Newer' }).click();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(10);
    await expect(table.locator('tbody tr').first().textContent()).resolves.toContain(`#${newest.externalOrderId}`);
    await page.goBack();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    expect(await accessibilityViolations(page), 'paged jobs').toEqual([]);
    await screenshot(page, 'jobs-1280');

    // Nothing needs attention any more except the disabled endpoint.
    await page.getByRole('link', { name: 'Attention' }).click();
    await view(page, 'Needs attention');
    await page.getByText('No dead or failed jobs. Everything is moving.').waitFor({ timeout: 15_000 });
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);

  it("shows webhook endpoints with their deliveries, retries a delivery and re-enables an endpoint", async () => {
    const { context, page, problems } = await openTab();
    await signIn(page, scene.user);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await view(page, 'Webhook endpoints');
    const endpoints = page.getByRole('table', { name: 'Webhook endpoints, newest first' });
    await expect.poll(() => endpoints.locator('tbody tr').count()).toBe(2);
    await page.getByRole('link', { name: receiver.url(scene.downEndpoint.path) }).click();
    await view(page, 'Webhook endpoint');
    expect(hash(page)).toBe(`#/webhooks/${scene.downEndpoint.id}`);
    const deliveries = page.getByRole('table', { name: 'Deliveries to the endpoint, newest first' });
    await expect.poll(() => deliveries.locator('tbody tr.delivery').count()).toBeGreaterThanOrEqual(3);
    const failed = deliveries.locator('tbody tr.delivery').filter({ hasText: 'sync_job.dead' }).first();
    await expect(failed.textContent()).resolves.toMatch(/failed.*2.*500/);
    // The event a delivery carried, on demand.
    await failed.getByRole('button', { name: /^Payload of sync_job.dead/ }).click();
    await expect.poll(() => page.locator('.payload-row pre').first().textContent()).toContain('"type": "sync_job.dead"');
    expect(await accessibilityViolations(page), 'endpoint view').toEqual([]);
    await screenshot(page, 'endpoint-1280');

    // The receiver is back: retry one failed delivery and see it succeed.
    receiver.behave(scene.downEndpoint.path, { status: 200 });
    const received = receiver.at(scene.downEndpoint.path).length;
    await failed.getByRole('button', { name: /^Retry the delivery of sync_job.dead/ }).click();
    await page.getByText('Delivery of sync_job.dead retried; it is pending again.').waitFor();
    await page.getByRole('navigation', { name: 'Deliveries by status' }).getByRole('link', { name: 'succeeded' }).click();
    await expect.poll(() => deliveries.locator('tbody tr.delivery').count(), { timeout: 15_000 }).toBe(1);
    expect(receiver.at(scene.downEndpoint.path).length).toBe(received + 1);

    // The disabled endpoint, enabled from the first view.
    await page.getByRole('link', { name: 'Attention' }).click();
    await view(page, 'Needs attention');
    await page.getByRole('button', { name: `Enable the webhook endpoint ${receiver.url(scene.pausedEndpoint.path)}` }).click();
    await page.getByText(/^Webhook endpoint .* enabled/).waitFor();
    await expect.poll(() => page.getByRole('table', { name: 'Disabled webhook endpoints' }).count()).toBe(0);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it('reads the audit log, filtered by store and paged', async () => {
    const { context, page, problems } = await openTab();
    await signIn(page, scene.user);
    await page.getByRole('link', { name: 'Audit log' }).click();
    await view(page, 'Audit log');
    await page.getByRole('form', { name: 'Filter the audit log' }).getByLabel('Store').selectOption({ label: 'Corner Shop' });
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => hash(page)).toBe(`#/audit?store=${scene.corner.reseller.id}`);
    await page.getByLabel('Rows per page').selectOption('10');
    const entries = page.getByRole('table', { name: 'Audit log entries, newest first' });
    await expect.poll(() => entries.locator('tbody tr').count()).toBe(10);
    const stores = await entries.locator('td[data-label="Store"]').allTextContents();
    expect(new Set(stores)).toEqual(new Set(['Corner Shop']));
    const firstPage = await entries.locator('tbody tr').first().textContent();
    await page.getByRole('link', { name: 'Older →' }).click();
    await expect.poll(() => entries.locator('tbody tr').first().textContent()).not.toBe(firstPage);
    // An entry about a job links to the job's page.
    const jobLink = entries.locator('td[data-label="Resource"] a').first();
    await expect(jobLink.getAttribute('href')).resolves.toMatch(/^#\/jobs\/job_/);
    expect(await accessibilityViolations(page), 'audit view').toEqual([]);
    await screenshot(page, 'audit-1280');
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('shows the divergence list with its dismiss, a failed job’s next retry, a cancellation with its retry, and request/response excerpts', async () => {
    // Retries ten minutes apart, so failed work is still failed, its next retry ahead, while it is looked at.
    const slow = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, SYNC_RETRY_BASE_DELAY_MS: '600000' });
    try {
      const shopSecret = `whsec_dock_${Math.random().toString(36).slice(2)}`;
      const crateSecret = `whsec_crate_${Math.random().toString(36).slice(2)}`;
      const shop = await openShop(slow.api, { name: 'Dock Street', webhookSecret: shopSecret });
      const crate = await addSupplier(slow.api, shop, { name: 'Crate Co', vendorTag: 'Crate', webhookSecret: crateSecret });
      const bolt = await addSupplier(slow.api, shop, { name: 'Bolt Wholesale', vendorTag: 'Bolt' });
      let orderId = 4_200_000 + Math.floor(Math.random() * 10_000) * 10;
      const storefront = (topic: string, payload: unknown) =>
        sendWebhook({ targetUrl: `${slow.url}/v1/orders/webhook`, shopDomain: shop.reseller.shopDomain, secret: shopSecret, topic, payload });
      /** A storefront order for one supplier, routed through the real orders/create webhook; its job once it settles. */
      const routed = async (supplier: Supplier, until: (job: any) => boolean) => {
        const order = sandbox.buildOrderPayload('platform_a', { id: orderId++, lines: [lineOf(supplier.vendorTag)] }) as Record<string, any>;
        sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', order);
        const response = await storefront('orders/create', order);
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        const jobId = (response.body as { syncJobIds: string[] }).syncJobIds[0]!;
        return { order, job: await waitForJob(slow.api, shop.user.token, jobId, until, 20_000, 'settled') };
      };
      /** The supplier cancels the order it received, on its own, through its webhook. */
      const supplierCancels = async (job: any, reason: string) => {
        const response = await sendWebhook({
          targetUrl: `${slow.url}/v1/fulfillments/webhook`,
          shopDomain: crate.shopDomain,
          secret: crateSecret,
          topic: 'orders/cancelled',
          payload: { id: job.sourceOrderId, cancelledAt: new Date().toISOString(), reason },
        });
        expect(response.body).toMatchObject({ received: true, syncJobIds: [job.id] });
      };

      // Two orders the supplier cancelled itself: two supplier_cancelled divergences.
      const completed = (job: any) => job.status === 'completed';
      const { job: outOfStock } = await routed(crate, completed);
      await supplierCancels(outOfStock, 'out of stock');
      const { job: discontinued } = await routed(crate, completed);
      await supplierCancels(discontinued, 'discontinued');
      // An order the customer cancels while the supplier's API is down: its cancellation failed, retried in ten minutes.
      const { order: cancelledOrder, job: cancelledJob } = await routed(crate, completed);
      sandbox.setFaults(crate.shopDomain, { alwaysFail: true, status: 503 });
      const cancelled = await storefront('orders/cancelled', { ...cancelledOrder, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' });
      expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
      await waitForJob(slow.api, shop.user.token, cancelledJob.id, (job) => job.cancellations[0]?.status === 'failed', 20_000, 'cancellation failed');
      // A supplier whose API is down: the job failed, its next retry in ten minutes.
      sandbox.setFaults(bolt.shopDomain, { alwaysFail: true, status: 503 });
      const { job: failedJob } = await routed(bolt, (job) => job.status === 'failed');
      expect(Date.parse(failedJob.nextRetryAt)).toBeGreaterThan(Date.now() + 60_000);

      const { context, page, problems, requests } = await openTab();
      await signIn(page, shop.user, slow.url);
      const list = page.getByRole('table', { name: 'Open divergences, newest first' });
      await expect.poll(() => list.locator('tbody tr').count(), { timeout: 10_000 }).toBe(2);
      await expect(list.locator('tbody tr').first().textContent()).resolves.toMatch(/Dock Street.*Cancelled by the supplier.*discontinued/);
      await expect(list.locator('tbody tr').last().textContent()).resolves.toMatch(/Dock Street.*Cancelled by the supplier.*out of stock/);
      await page.getByRole('heading', { level: 2, name: 'Divergences (2)' }).waitFor();
      const problemsTable = page.getByRole('table', { name: /Dead and failed sync jobs of all stores/ });
      await expect.poll(() => problemsTable.locator('tbody tr').count()).toBe(1);
      expect(await accessibilityViolations(page), 'attention view with divergences').toEqual([]);
      await screenshot(page, 'divergences-1280');

      // Dismiss one: the API records it, and the list keeps the other.
      await list.locator('tbody tr').filter({ hasText: 'discontinued' }).getByRole('button', { name: 'Dismiss the divergence Cancelled by the supplier' }).click();
      await page.getByText('Divergence dismissed: Cancelled by the supplier.').waitFor();
      expect(requests.filter((r) => /^POST \/v1\/reseller_stores\/[^/]+\/divergences\/[^/]+\/dismiss$/.test(r))).toHaveLength(1);
      await expect.poll(() => list.locator('tbody tr').count()).toBe(1);
      const divergences = await slow.api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token });
      // The list holds open entries only: the dismissed one left it.
      expect(divergences.body.data).toEqual([expect.objectContaining({ syncJobId: outOfStock.id, status: 'open', type: 'supplier_cancelled' })]);

      // The remaining divergence's job: cancelled by the supplier, and its attempt's exchange with the platform.
      await page.getByRole('link', { name: 'Open job: Cancelled by the supplier' }).click();
      await view(page, `Job for order #${outOfStock.externalOrderId}`);
      await expect(page.locator('.facts').first().textContent()).resolves.toMatch(/Cancelled by the supplier.*out of stock/);
      const attempts = page.getByRole('table', { name: 'Attempts of the job, oldest first' });
      await attempts.getByRole('button', { name: 'Request and response of attempt 1' }).click();
      await expect(attempts.getByLabel('Request of attempt 1', { exact: true }).textContent()).resolves.toMatch(/^POST \/orders\n/);
      await expect(attempts.getByLabel('Request of attempt 1', { exact: true }).textContent()).resolves.toContain('SKU-Crate');
      await expect(attempts.getByLabel('Response of attempt 1', { exact: true }).textContent()).resolves.toContain(outOfStock.sourceOrderId);
      expect(await accessibilityViolations(page), 'job view with an exchange').toEqual([]);

      // The failed job: when its automatic retry is due, and the platform's 503 as it came back.
      await page.evaluate(`location.hash = ${JSON.stringify(`#/jobs/${failedJob.id}`)}`);
      await view(page, `Job for order #${failedJob.externalOrderId}`);
      await expect(page.locator('.facts').first().textContent()).resolves.toMatch(/Next retry\d{1,2} [A-Z][a-z]{2} \d{2}:\d{2}:\d{2} \(in \d min\)/);
      await expect(page.locator('.facts time').filter({ hasText: /\(in \d min\)/ }).getAttribute('datetime')).resolves.toBe(failedJob.nextRetryAt);
      const failedAttempts = page.getByRole('table', { name: 'Attempts of the job, oldest first' });
      await failedAttempts.getByRole('button', { name: 'Request and response of attempt 1' }).click();
      await expect(failedAttempts.getByLabel('Response of attempt 1', { exact: true }).textContent()).resolves.toMatch(/^HTTP 503\n\n\{\n {2}"errors": "Simulated failure \(503\)"\n\}$/);
      await screenshot(page, 'job-next-retry-1280');

      // The cancelled order's job: its failed cancellation with its next retry, retried by hand once the supplier is back.
      await page.evaluate(`location.hash = ${JSON.stringify(`#/jobs/${cancelledJob.id}`)}`);
      await view(page, `Job for order #${cancelledJob.externalOrderId}`);
      const cancellation = page.getByRole('region', { name: /^Cancellation can_/ });
      await expect(cancellation.textContent()).resolves.toMatch(/failed.*none yet.*whole order.*SKU-Crate × 2.*—.*1.*Next retry.*\(in \d min\).*503/);
      expect(await accessibilityViolations(page), 'job view with a cancellation').toEqual([]);
      await screenshot(page, 'job-cancellations-1280');
      sandbox.clearFaults(crate.shopDomain);
      await cancellation.getByRole('button', { name: 'Retry this cancellation' }).click();
      await page.getByText(`Cancellation of order ${cancelledJob.externalOrderId} retried; it is pending again.`).waitFor();
      expect(requests.filter((r) => /^POST \/v1\/sync_jobs\/[^/]+\/cancellations\/can_[^/]+\/retry$/.test(r))).toHaveLength(1);
      await expect.poll(() => cancellation.textContent(), { timeout: 15_000 }).toMatch(/completed.*cancelled.*whole order/);
      expect(problems).toEqual([]);
      await context.close();
    } finally {
      await slow.stop();
    }
  }, 90_000);

  it('retries from the divergence list a dead job, undelivered tracking and a failed cancellation, until nothing needs attention', async () => {
    const shopSecret = `whsec_quay_${Math.random().toString(36).slice(2)}`;
    const supplierSecret = `whsec_pier_${Math.random().toString(36).slice(2)}`;
    const shop = await openShop(service.api, { name: 'Quay Market', webhookSecret: shopSecret });
    const pier = await addSupplier(service.api, shop, { name: 'Pier Goods', vendorTag: 'Pier', webhookSecret: supplierSecret });
    let orderId = 4_300_000 + Math.floor(Math.random() * 10_000) * 10;
    const storefront = (topic: string, payload: unknown) =>
      sendWebhook({ targetUrl: `${service.url}/v1/orders/webhook`, shopDomain: shop.reseller.shopDomain, secret: shopSecret, topic, payload });
    const routed = async (until: (job: any) => boolean) => {
      const order = sandbox.buildOrderPayload('platform_a', { id: orderId++, lines: [lineOf(pier.vendorTag)] }) as Record<string, any>;
      sandbox.seedOrder(shop.reseller.shopDomain, 'platform_a', order);
      const response = await storefront('orders/create', order);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      const jobId = (response.body as { syncJobIds: string[] }).syncJobIds[0]!;
      return { order, job: await waitForJob(service.api, shop.user.token, jobId, until, 20_000, 'settled') };
    };
    const completed = (job: any) => job.status === 'completed';

    // Two orders placed while both stores answer; then both go down.
    const { job: shipped } = await routed(completed);
    const { order: cancelledOrder, job: cancelledJob } = await routed(completed);
    sandbox.setFaults(pier.shopDomain, { alwaysFail: true, status: 503 });
    sandbox.setFaults(shop.reseller.shopDomain, { alwaysFail: true, status: 503 });
    // A new order's job dies; the supplier's shipment cannot reach the storefront; the customer's cancellation cannot reach the supplier.
    const { job: deadJob } = await routed((job) => job.status === 'dead');
    const shipment = await sendWebhook({
      targetUrl: `${service.url}/v1/fulfillments/webhook`,
      shopDomain: pier.shopDomain,
      secret: supplierSecret,
      topic: 'fulfillments/create',
      payload: buildFulfillmentPayload('custom', { orderId: shipped.sourceOrderId, trackingNumbers: ['QUAY-1'] }),
    });
    expect(shipment.status, JSON.stringify(shipment.body)).toBe(200);
    const cancelled = await storefront('orders/cancelled', { ...cancelledOrder, cancelled_at: new Date().toISOString(), cancel_reason: 'customer' });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    const openTypes = async () =>
      ((await service.api.get(`/v1/reseller_stores/${shop.reseller.id}/divergences`, { token: shop.user.token })).body.data as any[]).map((d) => d.type).sort();
    await expect.poll(openTypes, { timeout: 20_000 }).toEqual(['cancellation_dead', 'fulfillment_dead', 'job_dead']);
    sandbox.clearFaults(pier.shopDomain);
    sandbox.clearFaults(shop.reseller.shopDomain);

    const { context, page, problems, requests } = await openTab();
    await signIn(page, shop.user);
    const list = page.getByRole('table', { name: 'Open divergences, newest first' });
    await expect.poll(() => list.locator('tbody tr').count(), { timeout: 10_000 }).toBe(3);
    const row = (what: string) => list.locator('tbody tr').filter({ hasText: what });
    // Each entry names its storefront order.
    await expect(row('Order not placed (job dead)').textContent()).resolves.toContain(`#${deadJob.externalOrderId}`);
    await expect(row('Tracking not delivered').textContent()).resolves.toContain(`#${shipped.externalOrderId}`);
    await expect(row('Cancellation failed').textContent()).resolves.toContain(`#${cancelledJob.externalOrderId}`);

    await row('Order not placed (job dead)').getByRole('button', { name: 'Retry job' }).click();
    await page.getByText(`Job for order ${deadJob.externalOrderId} retried; it is pending again.`).waitFor();
    await row('Tracking not delivered').getByRole('button', { name: 'Retry tracking' }).click();
    await page.getByText(`Tracking of order ${shipped.externalOrderId} retried; it is pending again.`).waitFor();
    await row('Cancellation failed').getByRole('button', { name: 'Retry cancellation' }).click();
    await page.getByText(`Cancellation of order ${cancelledJob.externalOrderId} retried; it is pending again.`).waitFor();
    // In the order clicked, each to its own route.
    expect(requests.filter((r) => r.startsWith('POST /v1/sync_jobs/'))).toEqual([
      `POST /v1/sync_jobs/${deadJob.id}/retry`,
      expect.stringMatching(new RegExp(`^POST /v1/sync_jobs/${shipped.id}/fulfillments/ful_[^/]+/retry$`)),
      expect.stringMatching(new RegExp(`^POST /v1/sync_jobs/${cancelledJob.id}/cancellations/can_[^/]+/retry$`)),
    ]);

    // Each retry reached its store: the entries resolve, and the view says nothing is left (it polls).
    await page.getByText('Nothing needs attention: no divergence, no dead or failed job, no disabled webhook endpoint.').waitFor({ timeout: 20_000 });
    expect(await list.count()).toBe(0);
    expect(await openTypes()).toEqual([]);
    expect(sandbox.fulfillmentsFor(shop.reseller.shopDomain).map((f: any) => JSON.stringify(f))).toEqual([expect.stringContaining('QUAY-1')]);
    const cancelledNow = await waitForJob(service.api, shop.user.token, cancelledJob.id, completed, 5_000, 'completed');
    expect(cancelledNow.cancellations).toEqual([expect.objectContaining({ status: 'completed', outcome: 'cancelled' })]);
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it('renews an expired access token through the refresh cookie and carries on', async () => {
    const shop = await openShop(service.api, { name: 'Night Shop' });
    const { context, page, problems, requests } = await openTab();
    await signIn(page, shop.user);
    await page.getByRole('link', { name: 'Night Shop', exact: true }).waitFor();

    // The next stats call meets an access token the API no longer accepts, as it would after 15 minutes.
    let expired = 0;
    // One handler for the whole test: unrouting it while a poll's request was in flight once let that
    // request be handled twice (Playwright's "Route is already handled!", an unhandled rejection).
    let sessionGone = false;
    await page.route('**/v1/reseller_stores/*/stats', async (route) => {
      if (sessionGone) {
        return route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unauthorized', message: 'expired' }, request_id: 'req_test' }) });
      }
      if (expired++ > 0) return route.fallback();
      await route.fulfill({
        status: 401,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'unauthorized', message: 'The access token is not valid or has expired.' }, request_id: 'req_test' }),
      });
    });
    const refreshesBefore = requests.filter((r) => r === 'POST /v1/auth/refresh').length;
    // Its answer sets the new refresh cookie: waited for, or it could land after the cookies are
    // cleared below (a 5 s poll of the stats can count as the retry before the refresh has answered).
    const refreshed = page.waitForResponse((response) => new URL(response.url()).pathname === '/v1/auth/refresh');
    await page.getByRole('button', { name: 'Refresh', exact: true }).click();
    expect((await refreshed).status()).toBe(200);
    await expect.poll(() => expired, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    expect(requests.filter((r) => r === 'POST /v1/auth/refresh').length).toBe(refreshesBefore + 1);
    await expect(page.getByRole('button', { name: 'Sign out' }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole('alert').count()).resolves.toBe(0);

    // When the session itself is gone (revoked elsewhere), the operator is asked to sign in again.
    await context.clearCookies();
    sessionGone = true;
    // The next poll may find the session gone before a click lands: either way the operator is asked to sign in.
    await page.getByRole('button', { name: 'Refresh', exact: true }).click({ timeout: 3_000 }).catch(() => undefined);
    await page.getByText('Your session has ended. Sign in again.').waitFor();
    await page.getByLabel('Email').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('is usable on a 390 px phone: no sideways scrolling, rows as cards, no serious accessibility violation', async () => {
    const phoneScene = await operatorScene();
    const { context, page, problems } = await openTab(PHONE);
    await signIn(page, phoneScene.user);
    await page.getByRole('table', { name: /Dead and failed sync jobs/ }).getByRole('link', { name: `Job for order ${phoneScene.deadJob.externalOrderId} at Acme Supplies` }).waitFor();
    const pages: [string, string][] = [
      ['attention', ''],
      ['store', `#/stores/${phoneScene.harbour.reseller.id}`],
      ['job', `#/jobs/${phoneScene.deadJob.id}`],
      ['endpoint', `#/webhooks/${phoneScene.downEndpoint.id}`],
      ['audit', '#/audit?limit=10'],
    ];
    for (const [name, to] of pages) {
      if (to) {
        await page.evaluate(`location.hash = ${JSON.stringify(to)}`);
        await page.locator('table tbody tr').first().waitFor();
      }
      // Let the view's data arrive before measuring.
      await page.waitForLoadState('networkidle');
      expect(await accessibilityViolations(page), `${name} on a phone`).toEqual([]);
      await screenshot(page, `${name}-390`);
    }
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);
});
