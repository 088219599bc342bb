import type { NewEvent } from '../events/types.ts';
import type { SyncJob } from './entity.ts';
import { presentDetail, type JobWithFulfillments } from './present.ts';

/** A job's fulfillments as its GET shows them: each with its attempts' timeline, by fulfillment id. */
export type JobFulfillments = Omit<JobWithFulfillments, 'job'>;

const NO_FULFILLMENTS: JobFulfillments = { fulfillments: [], fulfillmentAttempts: new Map() };

/**
 * A `sync_job.*` event. The fulfillments are the job's at that moment. A job gets fulfillments only
 * once it is completed (they are found by the order id its completion recorded), and a completed
 * job never changes again, so the worker's and the routing's events carry none.
 */
export function syncJobEvent(type: `sync_job.${'created' | 'completed' | 'failed' | 'dead' | 'retried' | 'stale'}`, job: SyncJob, fulfillments: JobFulfillments = NO_FULFILLMENTS): NewEvent {
  return { ownerId: job.ownerId, resellerStoreId: job.resellerStoreId, type, object: presentDetail({ job, ...fulfillments }) };
}
