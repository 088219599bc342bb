import {
  createAttemptLifecycle,
  type AttemptContext,
  type AttemptEvent,
  type AttemptState,
  type PersistedAttempt,
} from './attempt.machine.ts';

export { MAX_AUTO_RETRIES, nextRetryDelayMs } from './attempt.machine.ts';

/**
 * Pushing a source store's fulfillment (tracking) back to the reseller order; on success it keeps
 * the id of the fulfillment created on the reseller platform.
 */
export const fulfillmentLifecycle = createAttemptLifecycle('fulfillment', 'resellerFulfillmentId');

export type { FulfillmentStatus } from '../contract/enums.ts';
export type FulfillmentContext = AttemptContext<'resellerFulfillmentId'>;
export type FulfillmentEvent = AttemptEvent<'resellerFulfillmentId'>;
export type PersistedFulfillment = PersistedAttempt<'resellerFulfillmentId'>;
export type FulfillmentState = AttemptState<'resellerFulfillmentId'>;

export function initialFulfillment(): FulfillmentState {
  return fulfillmentLifecycle.initial();
}

/** The propagation after `event`, or null when its current status does not allow the event. */
export function applyFulfillmentEvent(
  persisted: PersistedFulfillment,
  event: FulfillmentEvent,
): FulfillmentState | null {
  return fulfillmentLifecycle.apply(persisted, event);
}

export function canApplyFulfillmentEvent(persisted: PersistedFulfillment, event: FulfillmentEvent): boolean {
  return fulfillmentLifecycle.canApply(persisted, event);
}
