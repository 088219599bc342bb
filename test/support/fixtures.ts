/**
 * The set-up most test files share, as vitest fixtures: the sandbox platform, a webhook receiver,
 * the service on a fresh database wired to the sandbox, its API client, a registered user, and more
 * worker processes on the same database. Every one is file-scoped: started the first time a test or
 * a `beforeAll` of the file asks for it, shared by the file's tests, and stopped after the file in
 * reverse order (the extra workers, then the service, then the receiver and the sandbox). The one
 * exception, `startWorkerForTest`, starts workers that stop when the test that started them ends.
 *
 *   import { test as it } from './support/fixtures.ts';
 *
 *   it('reads the current user', async ({ api, user }) => {
 *     expect((await api.get('/v1/auth/me', { token: user.token })).status).toBe(200);
 *   });
 *
 * A file whose service needs more environment sets it once at its top level:
 * `it.override('serviceEnv', { ROLE: 'api' })`. Hooks that use a fixture come from the same
 * object (`it.beforeAll(async ({ api }) => …)`), and parameterised tests that do use `it.for`
 * (`it.each` passes no fixtures).
 */
import { randomBytes } from 'node:crypto';
import { test as base } from 'vitest';
import { startSandbox } from '../sandbox/server.ts';
import { registerUser } from './factories.ts';
import { startTestProcess, startTestService, type TestProcess, type TestService } from './service.ts';
import { WebhookReceiver } from './webhook-receiver.ts';

export const test = base
  /** Variables of the file's service on top of the defaults (test/support/service.ts); overridable per file. */
  .extend('serviceEnv', { scope: 'file' }, {} as Record<string, string>)
  /** The sandbox platform server (test/sandbox/) every service of the file calls. */
  .extend('sandbox', { scope: 'file' }, async ({}, { onCleanup }) => {
    const sandbox = await startSandbox();
    onCleanup(() => sandbox.close());
    return sandbox;
  })
  /**
   * A server for webhook endpoints that records and verifies what it receives. Set up before the
   * service when a test or hook asks for both, so it closes after the service stopped sending.
   */
  .extend('receiver', { scope: 'file' }, async ({}, { onCleanup }) => {
    const receiver = await WebhookReceiver.start();
    onCleanup(() => receiver.close());
    return receiver;
  })
  /**
   * What every process of the file shares: the sandbox as its platforms, and the secrets that let
   * processes on one database read each other's rows (store tokens are encrypted with the key).
   */
  .extend('processEnv', { scope: 'file' }, ({ sandbox, serviceEnv }) => ({
    PLATFORM_BASE_URL: sandbox.baseUrlTemplate,
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    JWT_SECRET: randomBytes(32).toString('hex'),
    ...serviceEnv,
  }))
  /** The service (every role unless `serviceEnv` says otherwise), in-process on a fresh database. */
  .extend('service', { scope: 'file' }, async ({ processEnv }, { onCleanup }) => {
    const service = await startTestService(processEnv);
    onCleanup(() => service.stop());
    return service;
  })
  /** Real HTTP to the service. */
  .extend('api', { scope: 'file' }, ({ service }) => service.api)
  /** A user for tests that only need someone signed in; tests about ownership register their own. */
  .extend('user', { scope: 'file' }, ({ api }) => registerUser(api))
  /**
   * Starts one more process on the service's database (ROLE worker unless `env` says otherwise),
   * with the file's secrets; each is stopped after the file, before the service.
   */
  .extend('startWorker', { scope: 'file' }, ({ service, processEnv }, { onCleanup }) => {
    const workers = workerStarter(service, processEnv);
    onCleanup(workers.stopAll);
    return workers.start;
  })
  /** `startWorker` for a test that needs workers of its own: they are stopped when the test ends. */
  .extend('startWorkerForTest', ({ service, processEnv }, { onCleanup }) => {
    const workers = workerStarter(service, processEnv);
    onCleanup(workers.stopAll);
    return workers.start;
  });

/** Starts worker processes on the service's database; `stopAll` stops them, newest first. */
function workerStarter(service: TestService, processEnv: Record<string, string>) {
  const started: TestProcess[] = [];
  return {
    start: async (env: Record<string, string> = {}): Promise<TestProcess> => {
      const worker = await startTestProcess({ ...processEnv, ROLE: 'worker', DATABASE_URL: service.databaseUrl, ...env });
      started.push(worker);
      return worker;
    },
    stopAll: async () => {
      for (const worker of started.reverse()) await worker.stop();
    },
  };
}
