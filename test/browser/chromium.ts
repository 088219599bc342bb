/**
 * What the browser suite shares: Debian's Chromium launched headless (playwright-core downloads no
 * browser; .ci/run installs the package), tabs that may reach only the service on loopback, and the
 * console's sign-in.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { TestUser } from '../support/factories.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
export const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

export const DESKTOP = { width: 1280, height: 900 };

/** Headless Chromium, or a clear error naming the package when it is not installed. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS, headless: true, chromiumSandbox: false });
}

/** What a tab did: requests that tried to leave loopback (refused) and page errors, and every request made. */
export interface TabRecord {
  problems: string[];
  requests: string[];
}

/**
 * Refuses every request of `target` (a tab or all of a context's) that would leave loopback, and
 * records what went wrong in the page. A test's own routes, added later, come first; they hand
 * requests they leave alone back here (`route.fallback()`).
 */
export async function keepToLoopback(target: Page | BrowserContext, record: TabRecord = { problems: [], requests: [] }): Promise<TabRecord> {
  await target.route('**/*', (route) => {
    const url = new URL(route.request().url());
    record.requests.push(`${route.request().method()} ${url.pathname}`);
    if (LOOPBACK_HOSTS.has(url.hostname)) return route.fallback();
    record.problems.push(`request left loopback: ${url.href}`);
    return route.abort('blockedbyclient');
  });
  return record;
}

/** A new tab in `context` (a new desktop-sized one by default) that may reach only loopback. */
export async function openLoopbackTab(browser: Browser, context?: BrowserContext): Promise<{ context: BrowserContext; page: Page } & TabRecord> {
  const ctx = context ?? (await browser.newContext({ viewport: DESKTOP }));
  const page = await ctx.newPage();
  const record = await keepToLoopback(page);
  page.on('pageerror', (error) => record.problems.push(`page error: ${error.message}`));
  return { context: ctx, page, ...record };
}

/** Signs in to the console at `baseUrl` by keyboard (Enter submits the form), and waits for the first view. */
export async function signIn(page: Page, user: TestUser, baseUrl: string): Promise<void> {
  await page.goto(`${baseUrl}/console`);
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByLabel('Password').press('Enter');
  await page.getByRole('heading', { level: 1, name: 'Needs attention' }).waitFor();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** Waits for the console view whose title is `name`. */
export async function view(page: Page, name: string | RegExp): Promise<void> {
  await page.getByRole('heading', { level: 1, name }).waitFor();
}
