import { nextRetryDelayMs } from '../../machines/attempt.machine.ts';
import { fulfillmentLifecycle } from '../../machines/fulfillment.machine.ts';
import { z } from 'zod';
import { attemptQueue, defineAttemptKind } from '../attempts/kind.ts';
import { fulfillmentOutcomeAudit, fulfillmentOutcomeEvents, propagateTracking, type FulfillmentAttemptDeps, type FulfillmentWork } from './attempt.ts';
import type { Fulfillment } from './entity.ts';

/**
 * Adding a supplier's tracking to the reseller's order: a kind of retried work (src/attempts/), run
 * by the worker src/workers/kinds.ts lists it for.
 */
export const fulfillmentKind = defineAttemptKind<Fulfillment, 'resellerFulfillmentId', { fulfillmentId: string; turnAt?: string | undefined; estimatedAt?: string | undefined }, FulfillmentWork, FulfillmentAttemptDeps>({
  name: 'fulfillment',
  table: 'fulfillments',
  resultColumn: 'reseller_fulfillment_id',
  lifecycle: fulfillmentLifecycle,
  queue: attemptQueue('fulfillment.propagate', { fulfillmentId: z.string() }),
  message: (fulfillmentId) => ({ fulfillmentId }),
  rowIdOf: (message) => message.fulfillmentId,
  logKey: 'fulfillment_id',
  retryDelayMs: (config, context) => nextRetryDelayMs(config.syncRetryBaseDelayMs, context),
  attempt: propagateTracking,
  outcomeAudit: fulfillmentOutcomeAudit,
  outcomeEvents: fulfillmentOutcomeEvents,
});
