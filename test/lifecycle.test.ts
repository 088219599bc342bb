import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { deleteDataDir } from '../src/db/embedded.ts';
import { ApiClient } from './support/api.ts';
import { ChildService, runFailingStart } from './support/child-service.ts';
import { queryRows } from './support/database.ts';
import { createResellerStore, createSourceStore, registerUser } from './support/factories.ts';
import { test as it } from './support/fixtures.ts';
import { startTestService } from './support/service.ts';
import { waitFor } from './support/wait.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'ors-lifecycle-'));
afterAll(() => deleteDataDir(dataDir));

describe('start-up and shutdown', () => {
  it('starts on an embedded PostgreSQL, drains on SIGTERM, and keeps all data across a restart', async () => {
    const service = new ChildService({ DATA_DIR: dataDir });
    const api = new ApiClient((await service.start()).url);
    const user = await registerUser(api);
    const store = await createResellerStore(api, user.token);
    expect(existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'))).toBe(true);

    expect(await service.stop(), service.lines.slice(-8).join('\n')).toBe(0);
    expect(service.lines.some((line) => line.includes('shutting down'))).toBe(true);
    // The embedded server shut down cleanly: it removes its pid file on a clean stop.
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);

    const restarted = await service.start();
    try {
      const again = new ApiClient(restarted.url);
      // The same generated JWT secret: the old access token is still valid.
      const fetched = await again.get(`/v1/reseller_stores/${store.id}`, { token: user.token });
      expect(fetched.status).toBe(200);
      expect(fetched.body.name).toBe(store.name);
      const login = await again.post('/v1/auth/login', { body: { email: user.email, password: user.password } });
      expect(login.status).toBe(200);
    } finally {
      expect(await service.stop()).toBe(0);
    }
  }, 90_000);

  it('refuses a bad configuration value with one line naming the variable', async () => {
    for (const [variable, value] of [['PORT', 'abc'], ['ROLE', 'boss'], ['SYNC_RETRY_BASE_DELAY_MS', '-1']] as const) {
      const { code, output } = await runFailingStart({ [variable]: value, DATA_DIR: dataDir });
      expect(code, variable).toBe(1);
      expect(output, variable).toHaveLength(1);
      expect(output[0], variable).toContain(`invalid configuration: ${variable}`);
    }
  }, 60_000);

  it('lets a job in flight finish when the service stops', async ({ sandbox }) => {
    // A service of its own, which this test stops with a job in flight.
    const service = await startTestService({ PLATFORM_BASE_URL: sandbox.baseUrlTemplate });
    const user = await registerUser(service.api);
    const reseller = await createResellerStore(service.api, user.token);
    const source = await createSourceStore(service.api, user.token, reseller.id, { vendorTag: 'Slow' });
    sandbox.seedOrder(reseller.shopDomain, 'platform_a', sandbox.buildOrderPayload('platform_a', { id: 88, lines: [{ sku: 'S', title: 'Slow', vendor: 'Slow', quantity: 1, price: '5.00' }] }));
    sandbox.setFaults(source.shopDomain, { latencyMs: 1500 });
    const job = await service.api.post('/v1/sync_jobs', { token: user.token, body: { source_store_id: source.id, external_order_id: '88' } });
    await waitFor(async () => (await queryRows(service.databaseUrl, 'select status from sync_jobs where id = $1', [job.body.id]))[0]?.status === 'processing');
    await service.stop();
    const [row] = await queryRows<{ status: string; attempts: number }>(service.databaseUrl, 'select status, attempts from sync_jobs where id = $1', [job.body.id]);
    expect(row).toEqual({ status: 'completed', attempts: 1 });
    expect(sandbox.ordersFor(source.shopDomain)).toHaveLength(1);
  }, 60_000);
});
