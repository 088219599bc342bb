/**
 * METRICS_TOKEN: GET /metrics answers only the scraper holding it (its series name stores and their
 * activity); without the variable it stays open outside production (test/operations.test.ts scrapes
 * it so) and is closed in production (test/url-safety.test.ts, whose service runs in production).
 */
import { expect } from 'vitest';
import { expectError } from './support/assertions.ts';
import { test } from './support/fixtures.ts';

const TOKEN = 'metrics-token-for-the-scraper-0123';
test.override('serviceEnv', { METRICS_TOKEN: TOKEN });
const it = test;

it('answers 401 unauthorized without the token or with another, and the metrics with it', async ({ service }) => {
  const refused: Record<string, string>[] = [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: TOKEN }, { authorization: 'Bearer ' }];
  for (const headers of refused) {
    expectError(await service.api.get('/metrics', { headers }), 401, 'unauthorized');
  }
  const scraped = await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(scraped.status).toBe(200);
  expect(await scraped.text()).toMatch(/^# HELP /m);
});
