/** GET /docs and its files carry a strict Content-Security-Policy and refuse to be framed. */
import { expect } from 'vitest';
import { test as it } from './support/fixtures.ts';

it.for(['/docs', '/docs/init.js', '/docs/assets/swagger-ui-bundle.js'])('%s: no script from elsewhere or inline, no framing', async (path, { service }) => {
  const response = await fetch(`${service.url}${path}`);
  await response.arrayBuffer();
  expect(response.status).toBe(200);
  const policy = response.headers.get('content-security-policy') ?? '';
  const directives = new Map(policy.split(';').map((directive) => {
    const [name = '', ...values] = directive.trim().split(/\s+/);
    return [name, values] as const;
  }));
  expect(directives.get('default-src')).toEqual(["'none'"]);
  expect(directives.get('script-src')).toEqual(["'self'"]);
  expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
  expect(response.headers.get('x-frame-options')).toBe('DENY');
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
});
