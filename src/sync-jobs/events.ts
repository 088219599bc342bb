import type { Trx } from '../db/sql.ts';
import type { NewEvent } from '../events/types.ts';
import { cancellationViewsIn } from '../cancellations/events.ts';
import type { SyncJob } from './entity.ts';
import { presentDetail, type JobWithFulfillments } from './present.ts';

/** A job's fulfillments as its GET shows them: each with its attempts' timeline, by fulfillment id. */
export type JobFulfillments = Omit<JobWithFulfillments, 'job'>;

type SyncJobEventType = `sync_job.${'created' | 'completed' | 'failed' | 'dead' | 'retried' | 'stale'}`;

const NO_FULFILLMENTS: JobFulfillments = { fulfillments: [], fulfillmentAttempts: new Map() };

/**
 * A `sync_job.*` event with what it is given. The fulfillments are the job's at that moment. A job
 * gets fulfillments only once it is completed (they are found by the order id its completion
 * recorded), and a completed job never changes again, so the worker's and the routing's events carry
 * none. Only `sync_job.created` is built here directly: a job has no cancellations in the transaction
 * that inserts it (the routing's cancellations of an order cancelled first follow the insert, with
 * their own events), nor does an outcome's of a job that has none (`jobOutcomeEventsOf`, the
 * worker's single-statement outcome: src/sync-jobs/attempt.ts). Every other one is built by
 * `syncJobEventsIn`, with the job's cancellations.
 */
export function syncJobEvent(type: SyncJobEventType, job: SyncJob, detail: JobFulfillments = NO_FULFILLMENTS): NewEvent {
  return { ownerId: job.ownerId, resellerStoreId: job.resellerStoreId, type, object: presentDetail({ job, ...detail }) };
}

/**
 * `sync_job.*` events, each job with its cancellations as the caller's transaction sees them (one
 * read for them all, src/cancellations/events.ts), and its fulfillments when given.
 */
export async function syncJobEventsIn(trx: Trx, events: { type: SyncJobEventType; job: SyncJob; fulfillments?: JobFulfillments }[]): Promise<NewEvent[]> {
  if (events.length === 0) return [];
  const cancellations = await cancellationViewsIn(trx, [...new Set(events.map(({ job }) => job.id))]);
  return events.map(({ type, job, fulfillments = NO_FULFILLMENTS }) => syncJobEvent(type, job, { ...fulfillments, cancellations: cancellations.get(job.id) ?? [] }));
}
