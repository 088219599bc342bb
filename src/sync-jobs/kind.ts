import { nextRetryDelayMs } from '../../machines/attempt.machine.ts';
import { syncJobLifecycle } from '../../machines/sync-job.machine.ts';
import { z } from 'zod';
import { attemptQueue, defineAttemptKind } from '../attempts/kind.ts';
import { jobOutcomeAudit, jobOutcomeEvents, jobOutcomeEventsOf, placeSupplierOrder, type SyncJobAttemptDeps } from './attempt.ts';
import type { SyncJob } from './entity.ts';
import type { JobWithSource } from './repository.ts';

/**
 * Placing one supplier's part of a reseller order on the supplier's store: a kind of retried work
 * (src/attempts/), run by the worker src/workers/kinds.ts lists it for.
 */
export const syncJobKind = defineAttemptKind<SyncJob, 'sourceOrderId', { syncJobId: string; turnAt?: string | undefined; estimatedAt?: string | undefined }, JobWithSource, SyncJobAttemptDeps>({
  name: 'sync_job',
  table: 'sync_jobs',
  resultColumn: 'source_order_id',
  // The supplier's line ids from the create answer, kept in the outcome's statement (issue 23).
  resultDetail: { column: 'supplier_lines', of: (created) => created.lines ?? null },
  lifecycle: syncJobLifecycle,
  queue: attemptQueue('sync-job.process', { syncJobId: z.string() }),
  message: (syncJobId) => ({ syncJobId }),
  rowIdOf: (message) => message.syncJobId,
  logKey: 'job_id',
  retryDelayMs: (config, context) => nextRetryDelayMs(config.syncRetryBaseDelayMs, context),
  attempt: placeSupplierOrder,
  outcomeAudit: jobOutcomeAudit,
  outcomeEvents: jobOutcomeEvents,
  outcomeEventsOf: jobOutcomeEventsOf,
});
