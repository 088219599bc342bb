import { nextRetryDelayMs } from '../../machines/attempt.machine.ts';
import { cancellationLifecycle } from '../../machines/cancellation.machine.ts';
import { z } from 'zod';
import { attemptQueue, defineAttemptKind } from '../attempts/kind.ts';
import { cancelSupplierOrder, cancellationOutcomeAudit, cancellationOutcomeEvents, type CancellationAttemptDeps } from './attempt.ts';
import type { Cancellation } from './entity.ts';
import type { CancellationWork } from './repository.ts';

/**
 * Cancelling a job's supplier order, or some of its lines, on the source store (order-changes.md):
 * a kind of retried work (src/attempts/), run by the worker src/workers/kinds.ts lists it for.
 */
export const cancellationKind = defineAttemptKind<Cancellation, 'outcome', { cancellationId: string; turnAt?: string | undefined; estimatedAt?: string | undefined }, CancellationWork, CancellationAttemptDeps>({
  name: 'cancellation',
  table: 'cancellations',
  resultColumn: 'outcome',
  lifecycle: cancellationLifecycle,
  queue: attemptQueue('cancellation.process', { cancellationId: z.string() }),
  message: (cancellationId) => ({ cancellationId }),
  rowIdOf: (message) => message.cancellationId,
  logKey: 'cancellation_id',
  retryDelayMs: (config, context) => nextRetryDelayMs(config.syncRetryBaseDelayMs, context),
  attempt: cancelSupplierOrder,
  outcomeAudit: cancellationOutcomeAudit,
  outcomeEvents: cancellationOutcomeEvents,
});
