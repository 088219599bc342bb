/**
 * The single-statement outcome (src/attempts/repository.ts, `AttemptWrite.events`): a sync job's
 * completion carries the events built from the job alone, and the transition statement writes the
 * job, its events and settles its message only when those events are complete and need no
 * deliveries. A job with cancellations (its events show them) or an owner with an endpoint
 * subscribed to the event (it needs a delivery and its queue message) is left unwritten, with
 * nothing else written, for the worker's transaction. Driven here on rows an API-only service made,
 * so no worker moves them meanwhile; the workers' side (events with cancellations, deliveries) is
 * covered end to end in test/cancellations.e2e.test.ts and test/events.test.ts.
 */
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { connectOrm } from '../src/database.ts';
import type { Orm } from '../src/db/orm.ts';
import { sqlOf } from '../src/db/sql.ts';
import { writeAttemptTransitions } from '../src/attempts/repository.ts';
import { SyncJob } from '../src/sync-jobs/entity.ts';
import { syncJobKind } from '../src/sync-jobs/kind.ts';
import { jobOutcomeEventsOf } from '../src/sync-jobs/attempt.ts';
import { EVENT_READS } from '../src/workers/kinds.ts';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { addSupplier, createJob, lineOf, openShop, queueMessage, seedResellerOrder } from './support/sync-jobs.ts';

test.override('serviceEnv', { ROLE: 'api' });

let orm: Orm;
const target = { ...syncJobKind, eventReads: EVENT_READS.sync_job };

const it = test
  /** A shop with one supplier and a pending job of it (no worker takes it). */
  .extend('pendingJob', ({ api, sandbox }) => async () => {
    const shop = await openShop(api);
    const supplier = await addSupplier(api, shop, { vendorTag: 'Acme' });
    const job = await createJob(api, shop.user.token, supplier.id, seedResellerOrder(sandbox, shop, [lineOf('Acme')]));
    return { shop, jobId: job.id as string };
  })
  /**
   * Completes the job as a worker would (TAKE, SUCCEED), in the one statement with its events;
   * whether it was written, and the row as the statement was handed it.
   */
  .extend('completeAlone', () => async (jobId: string) => {
    const job = await orm.em.fork().findOneOrFail(SyncJob, jobId);
    const messageId = job.queueMessageId!;
    const now = new Date();
    for (const event of [{ type: 'TAKE' }, { type: 'SUCCEED', sourceOrderId: 'supplier-order-1' }]) {
      expect(syncJobKind.transition(job, { ...event, at: now.toISOString() } as never, now)).toBe(true);
    }
    const write = { row: job, result: 'supplier-order-1', events: jobOutcomeEventsOf([job]), message: { id: messageId, settle: 'written' as const } };
    const [written] = await writeAttemptTransitions(sqlOf(orm), target, [write], { queue: syncJobKind.queue.name });
    return { written, messageId };
  });

describe('an outcome written with its events in one statement', () => {
  it.beforeAll(async ({ service }) => {
    orm = await connectOrm(service.databaseUrl, 2);
  });
  afterAll(() => orm?.close());

  const eventsOf = (databaseUrl: string, jobId: string) =>
    queryRows<{ type: string; payload: string }>(databaseUrl, `select type, payload from events where type like 'sync_job.%' and payload::jsonb #>> '{data,object,id}' = $1 order by id`, [jobId]);
  const statusOf = async (databaseUrl: string, jobId: string) =>
    (await queryRows<{ status: string }>(databaseUrl, 'select status from sync_jobs where id = $1', [jobId]))[0]!.status;

  it('with no cancellations and no endpoint: the job, its event and its settled message, together', async ({ service, pendingJob, completeAlone }) => {
    const { jobId } = await pendingJob();
    const { written, messageId } = await completeAlone(jobId);
    expect(written).toBe(true);
    expect(await statusOf(service.databaseUrl, jobId)).toBe('completed');
    const events = await eventsOf(service.databaseUrl, jobId);
    expect(events.map((event) => event.type)).toEqual(['sync_job.created', 'sync_job.completed']);
    const payload = JSON.parse(events[1]!.payload);
    expect(payload).toMatchObject({ object: 'event', type: 'sync_job.completed', data: { object: { id: jobId, status: 'completed', sourceOrderId: 'supplier-order-1', cancellations: [] } } });
    expect(payload.id).toMatch(/^evt_/);
    expect(await queueMessage(service.databaseUrl, messageId)).toMatchObject({ state: 'completed' });
  });

  it('with an endpoint subscribed to other events only, or disabled: written alone all the same', async ({ service, api, pendingJob, completeAlone }) => {
    const { shop, jobId } = await pendingJob();
    const other = await api.post('/v1/webhook_endpoints', { token: shop.user.token, body: { url: 'https://example.com/hooks', enabledEvents: ['order.unmatched'] } });
    expect(other.status).toBe(201);
    const off = await api.post('/v1/webhook_endpoints', { token: shop.user.token, body: { url: 'https://example.com/all', enabledEvents: ['*'] } });
    expect((await api.patch(`/v1/webhook_endpoints/${off.body.id}`, { token: shop.user.token, body: { status: 'disabled' } })).status).toBe(200);
    expect((await completeAlone(jobId)).written).toBe(true);
    expect((await eventsOf(service.databaseUrl, jobId)).map((event) => event.type)).toEqual(['sync_job.created', 'sync_job.completed']);
  });

  it('with an endpoint subscribed to the event: nothing written, the message left to the transaction', async ({ service, api, pendingJob, completeAlone }) => {
    const { shop, jobId } = await pendingJob();
    expect((await api.post('/v1/webhook_endpoints', { token: shop.user.token, body: { url: 'https://example.com/hooks', enabledEvents: ['sync_job.completed'] } })).status).toBe(201);
    const { written, messageId } = await completeAlone(jobId);
    expect(written).toBe(false);
    expect(await statusOf(service.databaseUrl, jobId)).toBe('pending');
    expect((await eventsOf(service.databaseUrl, jobId)).map((event) => event.type)).toEqual(['sync_job.created']);
    expect(await queueMessage(service.databaseUrl, messageId)).toMatchObject({ state: 'created' });
  });

  it('with a cancellation of the job: nothing written, its events are read in the transaction', async ({ service, pendingJob, completeAlone }) => {
    const { jobId } = await pendingJob();
    await queryRows(
      service.databaseUrl,
      `insert into cancellations (id, owner_id, reseller_store_id, sync_job_id, signal_id, scope, lines, status, attempts, retries_left, created_at, updated_at)
       select 'can_test_' || j.id, j.owner_id, j.reseller_store_id, j.id, 'sig_test', 'order', '[]'::jsonb, 'pending', 0, 3, now(), now()
       from sync_jobs j where j.id = $1`,
      [jobId],
    );
    const { written, messageId } = await completeAlone(jobId);
    expect(written).toBe(false);
    expect(await statusOf(service.databaseUrl, jobId)).toBe('pending');
    expect((await eventsOf(service.databaseUrl, jobId)).map((event) => event.type)).toEqual(['sync_job.created']);
    expect(await queueMessage(service.databaseUrl, messageId)).toMatchObject({ state: 'created' });
  });
});
