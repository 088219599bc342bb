import type { AttemptEntry } from '../attempts/entity.ts';
import { presentAttempt } from '../attempts/present.ts';
import { iso, isoOrNull } from '../shared/time.ts';
import type { Fulfillment } from './entity.ts';

/** A fulfillment as its job's GET shows it (also the `data.object` of its events). */
export function presentFulfillment(fulfillment: Fulfillment, attempts: AttemptEntry[]) {
  return {
    id: fulfillment.id,
    syncJobId: fulfillment.syncJobId,
    status: fulfillment.status,
    attempts: fulfillment.attempts,
    trackingNumbers: fulfillment.tracking.numbers,
    trackingUrls: fulfillment.tracking.urls,
    trackingCompany: fulfillment.tracking.company,
    resellerFulfillmentId: fulfillment.resellerFulfillmentId ?? null,
    errorMessage: fulfillment.errorMessage ?? null,
    completedAt: isoOrNull(fulfillment.completedAt),
    deadAt: isoOrNull(fulfillment.deadAt),
    nextRetryAt: fulfillment.status === 'failed' ? isoOrNull(fulfillment.nextRetryAt) : null,
    createdAt: iso(fulfillment.createdAt),
    timeline: attempts.map((entry) => presentAttempt(entry, 'resellerFulfillmentId')),
  };
}
