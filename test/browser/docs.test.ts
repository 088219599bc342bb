/**
 * GET /docs in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core): the API
 * reference renders from /openapi.json with every operation listed, and the page never reaches
 * past loopback (its assets are served by the service itself).
 */
import type { Browser } from 'playwright-core';
import { describe, expect } from 'vitest';
import { test } from '../support/fixtures.ts';
import { launchChromium, LOOPBACK_HOSTS } from './chromium.ts';


/** Headless Chromium, closed after the file (before the service stops). */
const it = test.extend('browser', { scope: 'file' }, async ({}, { onCleanup }): Promise<Browser> => {
  const browser = await launchChromium();
  onCleanup(() => browser.close());
  return browser;
});

describe('GET /docs', () => {
  it('lists every operation of openapi.json, with assets served by the service only', async ({ service, browser }) => {
    const context = await browser.newContext();
    const requested: string[] = [];
    const refused: string[] = [];
    await context.route('**/*', (route) => {
      const url = new URL(route.request().url());
      requested.push(url.href);
      if (LOOPBACK_HOSTS.has(url.hostname)) return route.continue();
      refused.push(url.href);
      return route.abort('blockedbyclient');
    });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));

    const response = await page.goto(`${service.url}/docs`);
    expect(response?.status()).toBe(200);
    await page.getByText('Create a sync job', { exact: true }).first().waitFor({ timeout: 20_000 });

    const document = (await (await fetch(`${service.url}/openapi.json`)).json()) as {
      info: { title: string };
      paths: Record<string, Record<string, { summary?: string }>>;
    };
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, summary: operation.summary ?? '' })),
    );
    expect(operations.length).toBeGreaterThan(20);

    const listed = await page.locator('.opblock-summary').evaluateAll((blocks) =>
      blocks.map((block) => ({
        method: block.querySelector('.opblock-summary-method')?.textContent?.trim() ?? '',
        path: block.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '',
        summary: block.querySelector('.opblock-summary-description')?.textContent?.trim() ?? '',
      })),
    );
    for (const operation of operations) expect(listed, `${operation.method} ${operation.path}`).toContainEqual(operation);
    expect(listed).toHaveLength(operations.length);
    for (const summary of ['Create a sync job', 'Connect a reseller store', 'Add a source store (supplier)', 'Revoke an API key']) {
      await expect(page.getByText(summary, { exact: true }).first().isVisible()).resolves.toBe(true);
    }
    await expect(page.getByText(document.info.title).first().isVisible()).resolves.toBe(true);
    // Try-it-out targets the service that served the page.
    await expect(page.locator('.servers select option').first().getAttribute('value')).resolves.toBe(service.url);

    expect(pageErrors).toEqual([]);
    expect(refused, 'requests that left loopback').toEqual([]);
    expect(requested).toContain(`${service.url}/openapi.json`);
    expect(requested.some((url) => url.startsWith(`${service.url}/docs/assets/`))).toBe(true);
    if (process.env.DOCS_SCREENSHOT) await page.screenshot({ path: process.env.DOCS_SCREENSHOT, fullPage: false });
    await context.close();
  });

  it('serves its assets from the service, and only the ones the page needs', async ({ service }) => {
    const css = await fetch(`${service.url}/docs/assets/swagger-ui.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    const script = await fetch(`${service.url}/docs/assets/swagger-ui-bundle.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect((await fetch(`${service.url}/docs/assets/package.json`)).status).toBe(404);
    expect((await fetch(`${service.url}/docs/assets/../package.json`)).status).toBe(404);
  });
});
