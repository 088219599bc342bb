/**
 * The operator console in headless Chromium against the real service, database, queue
 * and sandbox (as test/browser/console.test.ts does), for what that file did not cover:
 * - a custom storefront's order ids (`SO-1001`: letters, digits, `_` and `-`, as POST /v1/sync_jobs
 *   takes them) can be searched and filtered on;
 * - the bulk retry form of the jobs view does not keep a supplier of another store once the store
 *   filter changes (it retried nothing and said there was nothing to retry);
 * - a refresh the service refuses for a while (429 after too many sign-ins from one address) does
 *   not sign the operator out of a session that is still valid;
 * - two tabs renewing the session at the same time do not revoke it (a rotated refresh token
 *   presented again revokes the whole session);
 * - a paged view shows the page its URL names when an earlier page's answer lands late;
 * - what the operator types into the search box as soon as Back has shown the view is kept (the box
 *   was reset from the URL a frame later, which made a search typed at once search the old words).
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

const openTab = (context?: BrowserContext) => openLoopbackTab(browser, context);
const signIn = (page: Page, user: TestUser, baseUrl = service.url) => signInAt(page, user, baseUrl);
const hash = (page: Page) => new URL(page.url()).hash;

describe('the operator console (review 18)', () => {
  it("finds a custom storefront's order by its id (SO-…), from the search box and from the jobs' filter", async () => {
    const shop = await openShop(service.api, { name: 'Custom Shop', platform: 'custom' });
    const supplier = await addSupplier(service.api, shop, { name: 'Dune Supply', vendorTag: 'Dune' });
    const orderId = `SO-${Math.floor(Math.random() * 1e6)}`;
    const job = await createJob(service.api, shop.user.token, supplier.id, seedResellerOrder(sandbox, shop, [lineOf('Dune')], orderId));
    expect(job.externalOrderId).toBe(orderId);

    const { context, page, problems } = await openTab();
    await signIn(page, shop.user);
    const search = page.getByRole('searchbox', { name: 'Search by order number, job id or supplier' });
    await search.fill(orderId);
    await search.press('Enter');
    await view(page, `Search results for “${orderId}”`);
    await page.getByRole('link', { name: `Job for order ${orderId} at Dune Supply` }).waitFor({ timeout: 10_000 });

    // The jobs' filter form takes the same id.
    await page.getByRole('link', { name: 'Jobs', exact: true }).click();
    await view(page, 'Jobs');
    const filters = page.getByRole('form', { name: 'Filter the jobs' });
    await filters.getByLabel('Order number').fill(orderId);
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => hash(page), { timeout: 5_000 }).toContain(`order=${orderId}`);
    const table = page.getByRole('table', { name: 'Sync jobs, newest first' });
    await expect.poll(() => table.locator('tbody tr').count()).toBe(1);
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it("retries the dead jobs of the store filtered on, not none, after a supplier of another store was picked in the bulk form", async () => {
    const harbour = await openShop(service.api, { name: 'Harbour Goods' });
    const corner = await openShop(service.api, { name: 'Corner Shop' }, harbour.user);
    const user = harbour.user;
    const acme = await addSupplier(service.api, harbour, { name: 'Acme Supplies', vendorTag: 'Acme' });
    const crate = await addSupplier(service.api, corner, { name: 'Crate Co', vendorTag: 'Crate' });
    sandbox.setFaults(acme.shopDomain, { alwaysFail: true, status: 503 });
    sandbox.setFaults(crate.shopDomain, { alwaysFail: true, status: 503 });
    const dead = await Promise.all(
      [
        await createJob(service.api, user.token, acme.id, seedResellerOrder(sandbox, harbour, [lineOf('Acme')])),
        await createJob(service.api, user.token, crate.id, seedResellerOrder(sandbox, corner, [lineOf('Crate')])),
      ].map((job) => waitForJob(service.api, user.token, job.id, (j) => j.status === 'dead', 20_000, 'dead')),
    );
    const cornerJob = dead[1];

    const { context, page, problems } = await openTab();
    const bulkBodies: unknown[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/v1/sync_jobs/bulk_retry') bulkBodies.push(request.postDataJSON());
    });
    await signIn(page, user);
    await page.evaluate(`location.hash = ${JSON.stringify(`#/jobs?store=${harbour.reseller.id}`)}`);
    await view(page, 'Jobs');
    const bulk = page.getByRole('form', { name: 'Retry in bulk' });
    await bulk.getByLabel('Supplier').selectOption({ label: 'Acme Supplies' });

    // The operator moves the list to the other store, then retries its dead jobs in bulk.
    const filters = page.getByRole('form', { name: 'Filter the jobs' });
    await filters.getByLabel('Store').selectOption({ label: 'Corner Shop' });
    await filters.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => hash(page)).toContain(`store=${corner.reseller.id}`);
    await page.getByRole('button', { name: 'Retry matching jobs' }).click();
    await expect.poll(() => bulkBodies.length).toBe(1);
    expect(bulkBodies[0]).toEqual({ status: 'dead', reseller_store_id: corner.reseller.id });
    await page.getByText('Retried 1 dead job; it is pending again.').waitFor({ timeout: 5_000 });
    await waitForJob(service.api, user.token, cornerJob.id, (j) => j.attempts > cornerJob.attempts, 20_000, 'retried');
    expect(problems).toEqual([]);
    await context.close();
  }, 90_000);

  it('keeps the operator signed in when the service refuses a refresh for a while (429)', async () => {
    const limited = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate, AUTH_RATE_LIMIT_PER_MINUTE: '4' });
    try {
      const shop = await openShop(limited.api, { name: 'Night Shop' }); // 1: register
      const { context, page, problems, requests } = await openTab();
      await signIn(page, shop.user, limited.url); // 2: the page's refresh (no cookie yet), 3: sign-in
      await page.getByRole('link', { name: 'Night Shop', exact: true }).waitFor();
      // Other sign-ins from this address use up the minute's allowance.
      for (let i = 0; i < 3; i++) await limited.api.post('/v1/auth/login', { body: { email: shop.user.email, password: 'not-the-password' } });

      // The access token expires (as after 15 minutes): the console must renew it and is refused for now.
      let expired = false;
      let stillExpired = false;
      await page.route('**/v1/reseller_stores/*/stats', async (route) => {
        if (expired && !stillExpired) return route.fallback();
        expired = true;
        await route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ error: { code: 'unauthorized', message: 'expired' }, request_id: 'req_test' }) });
      });
      const refreshed = page.waitForResponse((response) => new URL(response.url()).pathname === '/v1/auth/refresh');
      await page.getByRole('button', { name: 'Refresh', exact: true }).click();
      expect((await refreshed).status()).toBe(429);
      await page.waitForTimeout(500);
      // Still signed in: the session is valid, only its renewal must wait.
      await expect(page.getByRole('button', { name: 'Sign out' }).isVisible()).resolves.toBe(true);
      await expect(page.getByText('Your session has ended. Sign in again.').count()).resolves.toBe(0);

      // While the token stays refused, the polls do not ask again before the Retry-After: each ask
      // would count against the same address's limit.
      const asked = () => requests.filter((r) => r === 'POST /v1/auth/refresh').length;
      const before = asked();
      stillExpired = true;
      await page.waitForTimeout(6_000);
      expect(asked()).toBe(before);
      await expect(page.getByRole('button', { name: 'Sign out' }).isVisible()).resolves.toBe(true);
      expect(problems).toEqual([]);
      await context.close();
    } finally {
      await limited.stop();
    }
  }, 60_000);

  it('does not revoke the session when two tabs renew it at the same time', async () => {
    const shop = await openShop(service.api, { name: 'Twin Shop' });
    const first = await openTab();
    await signIn(first.page, shop.user);
    const second = await openTab(first.context);
    const third = await openTab(first.context);

    // Two tabs opened together: each renews the session from the refresh cookie. The first tab's
    // refresh is held until the other tab has asked too (or, if that tab waits for this one, 1.5 s),
    // as when both ask within the same few milliseconds.
    let seen = 0;
    let release: (() => void) | null = null;
    const hold = async (route: Route) => {
      seen += 1;
      if (seen === 1) await new Promise<void>((resolve) => ((release = resolve), setTimeout(resolve, 1_500)));
      else if (seen === 2) release?.();
      await route.fallback();
    };
    await second.page.route('**/v1/auth/refresh', hold);
    await third.page.route('**/v1/auth/refresh', hold);
    await Promise.all([second.page.goto(`${service.url}/console`), third.page.goto(`${service.url}/console`)]);
    for (const tab of [second, third]) {
      await tab.page.getByRole('heading', { level: 1, name: /Needs attention|Operator console/ }).waitFor();
    }
    await Promise.all([second, third].map((tab) => tab.page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 10_000 })));
    // The session is still alive: a new tab resumes it from the cookie.
    const fourth = await openTab(first.context);
    await fourth.page.goto(`${service.url}/console`);
    await fourth.page.getByRole('button', { name: 'Sign out' }).waitFor({ timeout: 10_000 });
    expect([...first.problems, ...second.problems, ...third.problems, ...fourth.problems]).toEqual([]);
    await first.context.close();
  }, 60_000);

  it('shows the page of the audit log its URL names when an earlier page answers late', async () => {
    const shop = await openShop(service.api, { name: 'Ledger Shop' });
    for (let i = 0; i < 12; i++) await addSupplier(service.api, shop, { name: `Ledger supplier ${i}`, vendorTag: `Ledger${i}` });
    const newest = (await service.api.get('/v1/audit_log?limit=1', { token: shop.user.token })).body.data[0];

    const { context, page, problems } = await openTab();
    await signIn(page, shop.user);
    await page.evaluate(`location.hash = '#/audit?limit=10'`);
    await view(page, 'Audit log');
    const table = page.getByRole('table', { name: 'Audit log entries, newest first' });
    await expect.poll(() => table.locator('tbody tr').count()).toBe(10);

    // The older page answers slowly; the operator goes back to the newest before it has.
    let slow = 0;
    await page.route('**/v1/audit_log?*', async (route) => {
      if (!new URL(route.request().url()).searchParams.has('starting_after')) return route.fallback();
      slow += 1;
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await route.fallback();
    });
    await page.getByRole('link', { name: 'Older →' }).click();
    await expect.poll(() => slow).toBe(1);
    await page.goBack();
    await expect.poll(() => hash(page)).toBe('#/audit?limit=10');
    await page.waitForTimeout(2_500);
    // The URL is the newest page: so are the rows (and the pager's links, made from them).
    await expect(table.locator('tbody tr').count()).resolves.toBe(10);
    await expect(table.locator('tbody tr').first().textContent()).resolves.toContain(newest.resourceId);
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it('keeps what the operator types into the search box as soon as Back has shown the results', async () => {
    const shop = await openShop(service.api, { name: 'Quick Typist Shop' });
    const supplier = await addSupplier(service.api, shop, { name: 'Quill Supply', vendorTag: 'Quill' });
    const job = await createJob(service.api, shop.user.token, supplier.id, seedResellerOrder(sandbox, shop, [lineOf('Quill')]));

    const { context, page, problems } = await openTab();
    await signIn(page, shop.user);
    const search = page.getByRole('searchbox', { name: 'Search by order number, job id or supplier' });
    await search.fill(job.externalOrderId);
    await search.press('Enter');
    await view(page, `Search results for “${job.externalOrderId}”`);
    await page.getByRole('link', { name: 'Jobs', exact: true }).click();
    await view(page, 'Jobs');

    // The moment Back has drawn the results' heading, the operator types (before the next frame).
    await page.evaluate(`new MutationObserver((_, observer) => {
      if (document.querySelector('h1')?.textContent !== ${JSON.stringify(`Search results for “${job.externalOrderId}”`)}) return;
      observer.disconnect();
      const box = document.querySelector('#search');
      box.value = 'quill';
      box.dispatchEvent(new Event('input', { bubbles: true }));
    }).observe(document.body, { childList: true, subtree: true, characterData: true })`);
    await page.goBack();
    await view(page, `Search results for “${job.externalOrderId}”`);
    await page.waitForTimeout(300);
    await expect(search.inputValue()).resolves.toBe('quill');
    await search.press('Enter');
    await view(page, 'Search results for “quill”');
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);
});
