/**
 * Issue 6, item 3: platform faults. One order routed to many suppliers, each supplier's sandbox
 * store injecting its own faults: latency, 5xx, 429 with Retry-After (short: waited out inside the
 * call; long: the next attempt is scheduled after it), timeouts, connections dropped before the
 * order is made and connections dropped after it was made (a lost answer), bad credentials.
 *
 * The expected fate of each job is computed by a model of the retry policy (decisions.md: one
 * attempt plus 3 automatic retries, then dead; the adapter waits out a 429 asking for at most 5 s,
 * up to 3 times within an attempt) from the store's faults alone, and compared with what happened:
 * status, attempts, the number of requests the store saw, and the number of orders it holds, which
 * is never more than one.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Faults, type Sandbox } from '../sandbox/server.ts';
import { queryRows } from '../support/database.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { waitFor } from '../support/wait.ts';
import { ChaosClient, createReseller, createSupplier, registerUser, unique, type ResellerFixture, type SupplierFixture } from './support/client.ts';
import { deliverUntilAccepted } from './support/deliverer.ts';
import { itLeaksNoSecret, ledger } from './support/ledger.ts';

/** Generous enough that no call in time is cut short on a busy 2-core machine. */
const PLATFORM_TIMEOUT_MS = 2_000;
/** The adapter waits out a 429 inside the call when Retry-After asks for at most this long. */
const MAX_INLINE_RETRY_AFTER_MS = 5_000;
const MAX_INLINE_RETRIES = 3;
const MAX_ATTEMPTS = 4;

type Platform = 'platform_a' | 'platform_b' | 'custom';

interface Plan {
  label: string;
  platform: Platform;
  faults: Faults;
  /** The store only accepts another access token (the platform answers 401, echoing the token). */
  wrongToken?: boolean;
}

interface Fate {
  status: 'completed' | 'dead';
  attempts: number;
  /** Requests the store sees for the job. */
  requests: number;
  /** Orders the store ends up holding. */
  orders: 0 | 1;
}

/** The retry policy, as a model: what a job meets given its store's faults. */
function expectedFate(plan: Plan): Fate {
  if (plan.wrongToken) return { status: 'dead', attempts: MAX_ATTEMPTS, requests: MAX_ATTEMPTS, orders: 0 };
  const faults = { drop: plan.faults.dropNext ?? 0, acceptThenDrop: plan.faults.acceptThenDropNext ?? 0, rateLimit: plan.faults.rateLimitNext ?? 0, fail: plan.faults.failNext ?? 0 };
  const timesOut = (plan.faults.latencyMs ?? 0) > PLATFORM_TIMEOUT_MS;
  const waitsOut429 = (plan.faults.retryAfterSeconds ?? 1) * 1000 <= MAX_INLINE_RETRY_AFTER_MS;
  let requests = 0;
  let accepted = false;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    for (let inline = 0; ; inline++) {
      requests++;
      // The sandbox's order of precedence (test/sandbox/state.ts, takeFault); latency comes first.
      let outcome: 'fail' | 'retry inline' | 'success';
      if (faults.drop > 0) (faults.drop--, (outcome = 'fail'));
      else if (faults.acceptThenDrop > 0) (faults.acceptThenDrop--, (accepted = true), (outcome = 'fail'));
      else if (faults.rateLimit > 0) (faults.rateLimit--, (outcome = waitsOut429 && inline < MAX_INLINE_RETRIES ? 'retry inline' : 'fail'));
      else if (faults.fail > 0 || plan.faults.alwaysFail) (faults.fail = Math.max(0, faults.fail - 1), (outcome = 'fail'));
      else ((accepted = true), (outcome = timesOut ? 'fail' : 'success'));
      if (outcome === 'success') return { status: 'completed', attempts: attempt, requests, orders: 1 };
      if (outcome === 'fail') break;
    }
  }
  return { status: 'dead', attempts: MAX_ATTEMPTS, requests, orders: accepted ? 1 : 0 };
}

const FIXED: Plan[] = [
  { label: 'slow but in time', platform: 'platform_a', faults: { latencyMs: 150 } },
  { label: 'three 500s, then fine', platform: 'custom', faults: { failNext: 3 } },
  { label: 'four 503s: dead', platform: 'platform_b', faults: { failNext: 4, status: 503 } },
  { label: 'always 500', platform: 'custom', faults: { alwaysFail: true } },
  { label: 'dropped twice before the order', platform: 'platform_a', faults: { dropNext: 2 } },
  { label: 'answer lost after the order was made', platform: 'custom', faults: { acceptThenDropNext: 1 } },
  { label: 'answer lost four times: dead, one order', platform: 'platform_b', faults: { acceptThenDropNext: 4 } },
  { label: '429 with Retry-After 1 s, waited out in the call', platform: 'platform_a', faults: { rateLimitNext: 2, retryAfterSeconds: 1 } },
  { label: '429 with Retry-After 6 s: next attempt after it', platform: 'custom', faults: { rateLimitNext: 1, retryAfterSeconds: 6 } },
  { label: 'every call times out: dead, one order', platform: 'custom', faults: { latencyMs: 3_000 } },
  { label: 'wrong access token: 401 that echoes it', platform: 'custom', faults: {}, wrongToken: true },
];

const randomPlan: fc.Arbitrary<Plan> = fc
  .record({
    platform: fc.constantFrom<Platform>('platform_a', 'platform_b', 'custom'),
    latencyMs: fc.constantFrom(0, 0, 40, 120),
    dropNext: fc.nat(2),
    acceptThenDropNext: fc.nat(2),
    rateLimitNext: fc.nat(5),
    retryAfterSeconds: fc.constantFrom(0, 0, 1),
    failNext: fc.nat(5),
    status: fc.constantFrom(500, 502, 503, 504),
  })
  .map(({ platform, ...faults }) => ({ label: `random ${JSON.stringify(faults)}`, platform, faults }));

let sandbox: Sandbox;
let service: TestService;
let client: ChaosClient;
let token: string;
let reseller: ResellerFixture;
type JobRow = Awaited<ReturnType<typeof jobsOf>>[number];
let lastRun: { plan: Plan; supplier: SupplierFixture; fate: Fate; job: JobRow }[] = [];

function storeOf(label: string) {
  const store = lastRun.find((candidate) => candidate.plan.label === label);
  if (!store) throw new Error(`no store for "${label}": the fault run did not finish`);
  return store;
}

beforeAll(async () => {
  sandbox = await startSandbox();
  service = await startTestService({
    PLATFORM_BASE_URL: sandbox.baseUrlTemplate,
    SYNC_RETRY_BASE_DELAY_MS: '100',
    PLATFORM_TIMEOUT_MS: String(PLATFORM_TIMEOUT_MS),
    WORKER_CONCURRENCY: '48',
  });
  ledger.watch('in-process service', () => service.logs);
  client = new ChaosClient(service.url);
  token = (await registerUser(client)).token;
  reseller = await createReseller(client, token);
});

afterAll(async () => {
  await service?.stop();
  ledger.flush();
  await sandbox?.close();
});

async function jobsOf(orderId: number) {
  return queryRows<{ id: string; source_store_id: string; status: string; attempts: number; source_order_id: string | null; error_message: string | null; queue_message_id: string | null }>(
    service.databaseUrl,
    'select id, source_store_id, status, attempts, source_order_id, error_message, queue_message_id from sync_jobs where external_order_id = $1',
    [String(orderId)],
  );
}

describe('a supplier platform that misbehaves in every way', () => {
  it('ends every job completed or dead exactly as the retry policy says, with never a second order', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(randomPlan, { minLength: 24, maxLength: 24 }), async (randomPlans) => {
        const plans = [...FIXED, ...randomPlans];
        const orderId = 600_000_000 + round++;
        const stores: { plan: Plan; supplier: SupplierFixture; fate: Fate }[] = [];
        for (const plan of plans) {
          const supplier = await createSupplier(client, token, reseller.id, { platform: plan.platform, vendorTag: `Faulty ${unique()}` });
          sandbox.setFaults(supplier.shopDomain, plan.faults);
          if (plan.wrongToken) sandbox.registerStore(supplier.shopDomain, { accessToken: `other-${unique()}` });
          stores.push({ plan, supplier, fate: expectedFate(plan) });
        }
        expect(stores.map((store) => store.fate.status)).toContain('completed');
        expect(stores.map((store) => store.fate.status)).toContain('dead');

        const order = sandbox.buildOrderPayload('platform_a', {
          id: orderId,
          lines: stores.map(({ supplier }, i) => ({ sku: `F-${i}`, title: `Part ${i}`, vendor: supplier.vendorTag, quantity: 1, price: '10.00' })),
        });
        const delivery = await deliverUntilAccepted({
          url: () => `${service.url}/v1/orders/webhook`,
          shopDomain: reseller.shopDomain,
          secret: reseller.webhookSecret,
          topic: 'orders/create',
          payload: order,
        });
        expect(delivery.accepted.body.syncJobIds).toHaveLength(plans.length);

        const settled = await waitFor(async () => {
          const jobs = await jobsOf(orderId);
          return jobs.length === plans.length && jobs.every((job) => job.status === 'completed' || job.status === 'dead') ? jobs : null;
        }, 60_000, 'every job completed or dead');

        const mismatches: string[] = [];
        for (const { plan, supplier, fate } of stores) {
          const job = settled.find((row) => row.source_store_id === supplier.id)!;
          const received = sandbox.ordersFor(supplier.shopDomain);
          // A timed-out call is logged by the sandbox only once its latency has passed.
          const requests = await waitFor(async () => {
            const seen = sandbox.requestsFor(supplier.shopDomain).length;
            return seen >= fate.requests ? seen : null;
          }, 5_000, `${fate.requests} requests to ${plan.label}`).catch(() => sandbox.requestsFor(supplier.shopDomain).length);
          const actual = { status: job.status, attempts: job.attempts, requests, orders: received.length };
          if (JSON.stringify(actual) !== JSON.stringify(fate)) mismatches.push(`${plan.label}: expected ${JSON.stringify(fate)}, got ${JSON.stringify(actual)} (${job.error_message})`);
          expect(received.length, `${plan.label}: orders on the supplier`).toBeLessThanOrEqual(1);
          if (job.status === 'completed') expect(job.source_order_id).toBe(String(received[0]!.id));
          if (job.status === 'dead') {
            expect(job.error_message, plan.label).toBeTruthy();
            expect(job.queue_message_id, `${plan.label}: no retry left queued`).toBeNull();
          }
        }
        expect(mismatches).toEqual([]);

        // Every message for these jobs is finished; none is left to move them again.
        const open = await queryRows(service.databaseUrl, `select id from pgboss.job where name = 'sync-job.process' and state <> 'completed' and data->>'syncJobId' = any($1)`, [settled.map((job) => job.id)]);
        expect(open).toEqual([]);
        lastRun = stores.map((store) => ({ ...store, job: settled.find((row) => row.source_store_id === store.supplier.id)! }));
      }),
      { numRuns: 1, endOnFailure: true },
    );
  });

  it('waits out a long Retry-After before the next attempt', () => {
    const { supplier } = storeOf('429 with Retry-After 6 s: next attempt after it');
    const [limited, next] = sandbox.requestsFor(supplier.shopDomain);
    expect(limited!.status).toBe(429);
    expect(next!.status).toBe(201);
    expect(Date.parse(next!.at) - Date.parse(limited!.at)).toBeGreaterThanOrEqual(6_000);
  });

  it('completes a job that died of timeouts on a manual retry, with the order the platform had already made', async () => {
    const { supplier, job } = storeOf('every call times out: dead, one order');
    const [order] = sandbox.ordersFor(supplier.shopDomain);
    expect(order).toBeDefined();
    sandbox.clearFaults(supplier.shopDomain);
    const retried = await client.post(`/v1/sync_jobs/${job.id}/retry`, { token });
    expect(retried.status, retried.text).toBe(200);
    const done = await waitFor(async () => {
      const response = await client.get(`/v1/sync_jobs/${job.id}`, { token });
      return response.body.status === 'completed' ? response.body : null;
    }, 15_000, 'the retried job to complete');
    expect(done).toMatchObject({ attempts: MAX_ATTEMPTS + 1, sourceOrderId: String(order!.id), errorMessage: null });
    expect(sandbox.ordersFor(supplier.shopDomain)).toHaveLength(1);
  });

  it('keeps the access token a platform echoed in its 401 out of the job and the API', async () => {
    const { supplier, job } = storeOf('wrong access token: 401 that echoes it');
    const response = await client.get(`/v1/sync_jobs/${job.id}`, { token });
    expect(response.body).toMatchObject({ status: 'dead', attempts: MAX_ATTEMPTS });
    expect(response.body.errorMessage).toMatch(/401/);
    expect(response.text).not.toContain(supplier.accessToken);
    expect(job.error_message).not.toContain(supplier.accessToken);
  });
});

itLeaksNoSecret();
