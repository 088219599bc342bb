/**
 * The embedded PostgreSQL dying under a running service (the OOM killer picks its biggest process, an
 * operator's stray kill). README, Reliability, "Database outage": while PostgreSQL is down every
 * request answers 503, and "when it returns the service recovers without a restart". With the
 * embedded server nothing ever brought it back: the service answered 503 to every webhook and
 * /healthz 200 ("process up") for good, so neither a supervisor nor an orchestrator's liveness check
 * restarted anything, and orders were refused until someone noticed. The service must start its
 * server again on the same cluster (PostgreSQL's crash recovery replays the WAL: nothing committed is
 * lost) and recover as from any outage.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { deleteDataDir } from '../src/db/embedded.ts';
import { ApiClient } from './support/api.ts';
import { ChildService, isAlive } from './support/child-service.ts';
import { createResellerStore, registerUser } from './support/factories.ts';
import { waitFor } from './support/wait.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'ors-embedded-crash-'));
const service = new ChildService({ DATA_DIR: dataDir });
afterAll(async () => {
  await service.kill();
  deleteDataDir(dataDir);
});

function postmasterOf(lines: string[]): number {
  const started = lines.map((line) => { try { return JSON.parse(line) as { msg?: string; clusterDir?: string }; } catch { return {}; } }).find((entry) => entry.msg === 'embedded PostgreSQL started');
  const pidFile = path.join(started!.clusterDir!, 'postmaster.pid');
  return Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
}

describe('the embedded PostgreSQL killed under a running service', () => {
  it('is started again: the service is ready again and keeps what was committed', async () => {
    const api = new ApiClient((await service.start()).url);
    const user = await registerUser(api);
    const store = await createResellerStore(api, user.token);
    const postmaster = postmasterOf(service.lines);
    process.kill(postmaster, 'SIGKILL');
    await waitFor(async () => !isAlive(postmaster), 10_000, 'the postmaster to die');
    expect((await api.get('/readyz')).status).toBe(503);

    await waitFor(async () => (await api.get('/readyz')).status === 200, 30_000, '/readyz 200 again');
    const fetched = await api.get(`/v1/reseller_stores/${store.id}`, { token: user.token });
    expect(fetched.status).toBe(200);
    expect(fetched.body.name).toBe(store.name);
    expect(await service.stop()).toBe(0);
  }, 120_000);
});
