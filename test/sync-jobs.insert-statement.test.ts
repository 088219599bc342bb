/**
 * The routing's job insert (src/sync-jobs/repository.ts `insertNew`) writes each new job's
 * `sync_job.created` event in the same statement when no endpoint of the owner subscribes to it, and
 * leaves it to the caller's outbox (which adds the deliveries) when one does. A candidate whose job
 * exists already gets no event either way. The same statement takes the locks it is handed (the
 * orders' cancellation locks) whether or not it inserts a job. Driven here on the repository, with an
 * API-only service for the stores and endpoints; the routing end to end is in test/events.test.ts
 * and test/cancellations.*.test.ts.
 */
import { sql } from 'kysely';
import { afterAll, describe, expect } from 'vitest';
import { connectOrm } from '../src/database.ts';
import type { Orm } from '../src/db/orm.ts';
import { sqlOf } from '../src/db/sql.ts';
import { newId } from '../src/shared/ids.ts';
import { newMessageId } from '../src/queue/queue.ts';
import type { SyncJob } from '../src/sync-jobs/entity.ts';
import { syncJobEvent } from '../src/sync-jobs/events.ts';
import { syncJobKind } from '../src/sync-jobs/kind.ts';
import { SyncJobRepository, type JobCandidate } from '../src/sync-jobs/repository.ts';
import { queryRows } from './support/database.ts';
import { test } from './support/fixtures.ts';
import { addSupplier, newOrderId, openShop, type Shop } from './support/sync-jobs.ts';

test.override('serviceEnv', { ROLE: 'api' });

let orm: Orm;

function candidateFor(shop: Shop & { ownerId: string }, sourceStoreId: string, externalOrderId: string): JobCandidate {
  const id = newId('syncJob');
  const now = new Date();
  const job = { ...syncJobKind.initialColumns(now), id, ownerId: shop.ownerId, resellerStoreId: shop.reseller.id, sourceStoreId, externalOrderId, sourceOrderId: null, createdAt: now, updatedAt: now };
  return {
    id,
    owner_id: shop.ownerId,
    reseller_store_id: shop.reseller.id,
    source_store_id: sourceStoreId,
    external_order_id: externalOrderId,
    origin: 'manual',
    order: null,
    queue_message_id: newMessageId(),
    audit_id: newId('auditEntry'),
    audit_metadata: { externalOrderId, sourceStoreId },
    actor_id: shop.ownerId,
    events: [syncJobEvent('sync_job.created', job as unknown as SyncJob)],
  };
}

function insert(candidates: JobCandidate[], lockKeys: string[] = [], whileOpen: () => Promise<void> = async () => {}) {
  const now = new Date();
  return sqlOf(orm)
    .transaction()
    .execute(async (trx) => {
      const rows = await new SyncJobRepository(orm).insertNew(trx, candidates, syncJobKind.initialColumns(now) as SyncJob, now, lockKeys);
      await whileOpen();
      return rows;
    });
}

/** Whether another session could take the lock on `key` now (it lets go of it at once). */
async function lockIsFree(key: string): Promise<boolean> {
  return sqlOf(orm)
    .transaction()
    .execute(async (trx) => (await sql<{ taken: boolean }>`select pg_try_advisory_xact_lock(hashtext(${key})) as taken`.execute(trx)).rows[0]!.taken);
}

/** A user's shop, with the owner id its rows carry. */
async function shopOf(api: Parameters<typeof openShop>[0], databaseUrl: string) {
  const shop = await openShop(api);
  const [store] = await queryRows<{ owner_id: string }>(databaseUrl, 'select owner_id from reseller_stores where id = $1', [shop.reseller.id]);
  return { ...shop, ownerId: store!.owner_id };
}

const eventsOfJob = (databaseUrl: string, jobId: string) =>
  queryRows<{ id: string; type: string; payload: string; deliveries: string }>(
    databaseUrl,
    `select e.id, e.type, e.payload, (select count(*) from webhook_deliveries d where d.event_id = e.id) as deliveries
     from events e where e.payload::jsonb #>> '{data,object,id}' = $1`,
    [jobId],
  );

describe('the job insert and its sync_job.created events', () => {
  test.beforeAll(async ({ service }) => {
    orm = await connectOrm(service.databaseUrl, 2);
  });
  afterAll(() => orm?.close());

  test('no endpoint subscribed: each new job\'s event is written by the insert, none for a job that exists', async ({ service, api }) => {
    const shop = await shopOf(api, service.databaseUrl);
    const supplier = await addSupplier(api, shop);
    const orderId = newOrderId();
    const first = candidateFor(shop, supplier.id, orderId);

    const [row, ...more] = await insert([first]);
    expect(more).toEqual([]);
    expect(row).toEqual({ candidate: first.id, id: first.id, queueMessageId: first.queue_message_id, created: true, eventsWritten: true });
    const [event, ...others] = await eventsOfJob(service.databaseUrl, first.id);
    expect(others).toEqual([]);
    expect(event!.type).toBe('sync_job.created');
    expect(Number(event!.deliveries)).toBe(0);
    expect(JSON.parse(event!.payload)).toMatchObject({ id: event!.id, object: 'event', type: 'sync_job.created', data: { object: { id: first.id, status: 'pending', externalOrderId: orderId } } });

    // The same order and supplier again: no job inserted, so no event.
    const again = candidateFor(shop, supplier.id, orderId);
    expect(await insert([again])).toEqual([]);
    expect(await eventsOfJob(service.databaseUrl, again.id)).toEqual([]);
  });

  test('an endpoint subscribed: the insert writes no event and says so, for the outbox to append with its delivery', async ({ service, api, receiver }) => {
    const shop = await shopOf(api, service.databaseUrl);
    const supplier = await addSupplier(api, shop);
    const endpoint = await api.post('/v1/webhook_endpoints', { token: shop.user.token, body: { url: receiver.url('/insert-events'), enabledEvents: ['sync_job.created'] } });
    expect(endpoint.status).toBe(201);
    const candidate = candidateFor(shop, supplier.id, newOrderId());

    const [row] = await insert([candidate]);
    expect(row).toMatchObject({ id: candidate.id, created: true, eventsWritten: false });
    expect(await eventsOfJob(service.databaseUrl, candidate.id)).toEqual([]);
  });

  test('takes the locks it is handed once its jobs are in, and holds them until commit, also when it inserts no job', async ({ service, api }) => {
    const shop = await shopOf(api, service.databaseUrl);
    const supplier = await addSupplier(api, shop);
    const orderId = newOrderId();
    const keys = [`cancel:${shop.reseller.id}:${orderId}`, `cancel:${shop.reseller.id}:${newOrderId()}`];
    const seen: boolean[][] = [];
    const whileOpen = async () => {
      seen.push(await Promise.all(keys.map(lockIsFree)));
    };

    expect(await insert([candidateFor(shop, supplier.id, orderId)], keys, whileOpen)).toHaveLength(1);
    // The same order again (no job inserted), and no candidate at all: the locks are still taken.
    expect(await insert([candidateFor(shop, supplier.id, orderId)], keys, whileOpen)).toEqual([]);
    expect(await insert([], keys, whileOpen)).toEqual([]);
    expect(seen).toEqual([[false, false], [false, false], [false, false]]);
    // Released with the transaction.
    expect(await Promise.all(keys.map(lockIsFree))).toEqual([true, true]);
  });
});
