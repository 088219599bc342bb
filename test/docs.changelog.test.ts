/**
 * Integrators whose requests an API change refuses need to be told where the project says what
 * changed: since 374934f every POST with a JSON body refuses a field it does not define (400), since
 * 4b55195 a paging cursor the list did not issue is 400, and since 190830c an order id with leading
 * zeros names the number's order. docs/CHANGELOG.md, linked from README, lists such changes; each
 * route a change refuses requests on is named there.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { contract } from '../contract/index.ts';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

describe('the changelog for integrators', () => {
  it('is linked from README', () => {
    expect(read('README.md')).toContain('](docs/CHANGELOG.md)');
  });

  it('names every POST that refuses unknown body fields, the paging cursors and the order ids with leading zeros', () => {
    const changelog = read('docs/CHANGELOG.md');
    expect(changelog).toMatch(/unknown fields in POST bodies are refused/i);
    // The routes 374934f made strict; every other POST with a body already was.
    const madeStrict = [contract.syncJobs.create, contract.apiKeys.create, contract.resellerStores.create, contract.sourceStores.create, contract.auth.register, contract.auth.login];
    for (const route of madeStrict) expect(changelog).toContain(`\`POST ${route.path.replace(/:([a-z_]+)/g, '{$1}')}\``);
    expect(changelog).toContain('`starting_after`');
    expect(changelog).toContain('`01001`');
  });
});
