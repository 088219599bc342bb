/**
 * Every kind of work that is attempted, retried and may die, defined once each: its table and
 * result column, its lifecycle machine (machines/), its queue and message, its retry schedule, what
 * one attempt does and the audit entry of its outcome. The worker (worker.ts), the row projection
 * (kind.ts) and the metrics come from these definitions; the statuses are the contract's
 * (contract/enums.ts `ATTEMPT_STATUSES`). A new kind is one more entry here (and its queue in
 * src/queue/queue.ts).
 */
import { fulfillmentLifecycle } from '../../machines/fulfillment.machine.ts';
import { nextRetryDelayMs } from '../../machines/attempt.machine.ts';
import { syncJobLifecycle } from '../../machines/sync-job.machine.ts';
import type { Fulfillment } from '../fulfillments/entity.ts';
import { fulfillmentOutcomeAudit, fulfillmentOutcomeEvents, propagateTracking, type FulfillmentWork } from '../fulfillments/attempt.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';
import { jobOutcomeAudit, jobOutcomeEvents, placeSupplierOrder } from '../sync-jobs/attempt.ts';
import type { JobWithSource } from '../sync-jobs/repository.ts';
import { defineAttemptKind } from './kind.ts';
import { cancellationLifecycle } from '../../machines/cancellation.machine.ts';
import type { Cancellation } from '../cancellations/entity.ts';
import { cancelSupplierOrder, cancellationOutcomeAudit, cancellationOutcomeEvents } from '../cancellations/attempt.ts';
import type { CancellationWork } from '../cancellations/repository.ts';

/** Placing one supplier's part of a reseller order on the supplier's store. */
export const syncJobKind = defineAttemptKind<SyncJob, 'sourceOrderId', 'syncJob', JobWithSource>({
  name: 'sync_job',
  table: 'sync_jobs',
  resultColumn: 'source_order_id',
  lifecycle: syncJobLifecycle,
  queue: 'syncJob',
  message: (syncJobId) => ({ syncJobId }),
  rowIdOf: (message) => message.syncJobId,
  logKey: 'job_id',
  retryDelayMs: (config, context) => nextRetryDelayMs(config.syncRetryBaseDelayMs, context),
  attempt: placeSupplierOrder,
  outcomeAudit: jobOutcomeAudit,
  outcomeEvents: jobOutcomeEvents,
});

/** Adding a supplier's tracking to the reseller's order. */
export const fulfillmentKind = defineAttemptKind<Fulfillment, 'resellerFulfillmentId', 'fulfillment', FulfillmentWork>({
  name: 'fulfillment',
  table: 'fulfillments',
  resultColumn: 'reseller_fulfillment_id',
  lifecycle: fulfillmentLifecycle,
  queue: 'fulfillment',
  message: (fulfillmentId) => ({ fulfillmentId }),
  rowIdOf: (message) => message.fulfillmentId,
  logKey: 'fulfillment_id',
  retryDelayMs: (config, context) => nextRetryDelayMs(config.syncRetryBaseDelayMs, context),
  attempt: propagateTracking,
  outcomeAudit: fulfillmentOutcomeAudit,
  outcomeEvents: fulfillmentOutcomeEvents,
});

/** Cancelling a job's supplier order, or some of its lines, on the source store (src/cancellations/). */
export const cancellationKind = defineAttemptKind<Cancellation, 'outcome', 'cancellation', CancellationWork>({
  name: 'cancellation',
  table: 'cancellations',
  resultColumn: 'outcome',
  lifecycle: cancellationLifecycle,
  queue: 'cancellation',
  message: (cancellationId) => ({ cancellationId }),
  rowIdOf: (message) => message.cancellationId,
  logKey: 'cancellation_id',
  retryDelayMs: (config, context) => nextRetryDelayMs(config.syncRetryBaseDelayMs, context),
  attempt: cancelSupplierOrder,
  outcomeAudit: cancellationOutcomeAudit,
  outcomeEvents: cancellationOutcomeEvents,
});

/** Every kind, one worker each (src/workers/index.ts). */
export const ATTEMPT_KINDS = [syncJobKind, fulfillmentKind, cancellationKind] as const;
