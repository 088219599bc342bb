import type { AttemptEntry } from '../attempts/entity.ts';
import type { Fulfillment } from '../fulfillments/entity.ts';
import { presentFulfillment } from '../fulfillments/present.ts';
import { iso, isoOrNull } from '../shared/time.ts';
import type { SyncJob } from './entity.ts';

export interface JobWithFulfillments {
  job: SyncJob;
  fulfillments: Fulfillment[];
  /** The fulfillments' timelines, by fulfillment id, oldest attempt first. */
  fulfillmentAttempts: Map<string, AttemptEntry[]>;
}

export function presentSyncJob(job: SyncJob) {
  return {
    id: job.id,
    resellerStoreId: job.resellerStoreId,
    sourceStoreId: job.sourceStoreId,
    status: job.status,
    attempts: job.attempts,
    externalOrderId: job.externalOrderId,
    sourceOrderId: job.sourceOrderId ?? null,
    errorMessage: job.errorMessage ?? null,
    completedAt: isoOrNull(job.completedAt),
    failedAt: isoOrNull(job.failedAt),
    deadAt: isoOrNull(job.deadAt),
    createdAt: iso(job.createdAt),
    updatedAt: iso(job.updatedAt),
  };
}

/** A job as its GET shows it (also the `data.object` of its events). */
export const presentDetail = ({ job, fulfillments, fulfillmentAttempts }: JobWithFulfillments) => ({
  ...presentSyncJob(job),
  fulfillments: fulfillments.map((fulfillment) => presentFulfillment(fulfillment, fulfillmentAttempts.get(fulfillment.id) ?? [])),
});
