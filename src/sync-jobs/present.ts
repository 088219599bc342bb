import type { AttemptEntry } from '../attempts/entity.ts';
import type { Fulfillment } from '../fulfillments/entity.ts';
import { presentFulfillment } from '../fulfillments/present.ts';
import { iso, isoOrNull } from '../shared/time.ts';
import { presentCancellation, type CancellationView } from '../cancellations/present.ts';
import type { SyncJob } from './entity.ts';

export interface JobWithFulfillments {
  job: SyncJob;
  fulfillments: Fulfillment[];
  /** The fulfillments' timelines, by fulfillment id, oldest attempt first. */
  fulfillmentAttempts: Map<string, AttemptEntry[]>;
  /** The job's cancellations with their timelines, oldest first (none when left out). */
  cancellations?: CancellationView[];
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
    nextRetryAt: job.status === 'failed' ? isoOrNull(job.nextRetryAt) : null,
    createdAt: iso(job.createdAt),
    updatedAt: iso(job.updatedAt),
    supplierCancelledAt: isoOrNull(job.supplierCancelledAt),
    supplierCancelReason: job.supplierCancelReason ?? null,
  };
}

/** A job as its GET shows it (also the `data.object` of its events). */
export const presentDetail = ({ job, fulfillments, fulfillmentAttempts, cancellations = [] }: JobWithFulfillments) => ({
  ...presentSyncJob(job),
  fulfillments: fulfillments.map((fulfillment) => presentFulfillment(fulfillment, fulfillmentAttempts.get(fulfillment.id) ?? [])),
  cancellations: cancellations.map(presentCancellation),
});

/** A job as its GET shows it. */
export type JobDetail = ReturnType<typeof presentDetail>;
