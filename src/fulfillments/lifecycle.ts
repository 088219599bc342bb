import { applyFulfillmentEvent, initialFulfillment, type FulfillmentEvent } from '../../machines/fulfillment.machine.ts';
import { persistedOf, projectAttempt } from '../shared/attempt-row.ts';
import type { Fulfillment } from './entity.ts';

export function initialProjection(at: Date): Partial<Fulfillment> {
  const fulfillment: Partial<Fulfillment> = {};
  projectAttempt(fulfillment, initialFulfillment(), 'resellerFulfillmentId', at);
  return fulfillment;
}

/** Applies an event to a fulfillment; false (and no change) when the machine refuses it. */
export function transitionFulfillment(fulfillment: Fulfillment, event: FulfillmentEvent, at: Date): boolean {
  const next = applyFulfillmentEvent(persistedOf(fulfillment), event);
  if (!next) return false;
  projectAttempt(fulfillment, next, 'resellerFulfillmentId', at);
  return true;
}
