import type { AttemptEntry } from '../attempts/entity.ts';
import type { NewEvent } from '../events/types.ts';
import type { Fulfillment } from './entity.ts';
import { presentFulfillment } from './present.ts';

/** A `fulfillment.*` event: the fulfillment as its job's GET shows it, with its attempts' timeline. */
export function fulfillmentEvent(type: 'fulfillment.completed' | 'fulfillment.dead' | 'fulfillment.reconciled', fulfillment: Fulfillment, timeline: AttemptEntry[]): NewEvent {
  return { ownerId: fulfillment.ownerId, resellerStoreId: fulfillment.resellerStoreId, type, object: presentFulfillment(fulfillment, timeline) };
}
