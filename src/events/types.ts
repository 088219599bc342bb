import type { EventType } from '../../contract/events.ts';
import type { AttemptEntry } from '../attempts/entity.ts';
import type { Fulfillment } from '../fulfillments/entity.ts';
import type { OrderLine } from '../orders/types.ts';
import { presentDetail, presentFulfillment } from '../sync-jobs/routes.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';

export type { EventType };

/** An event to append to the outbox (src/events/outbox.ts), in the transaction of the change it reports. */
export interface NewEvent {
  ownerId: string;
  /** Null only for `ping`. */
  resellerStoreId: string | null;
  type: EventType;
  /** `data.object`: the resource as its GET returns it at the moment of the change. */
  object: object;
}

/** A job's fulfillments as its GET shows them: each with its attempts' timeline, by fulfillment id. */
export interface JobFulfillments {
  fulfillments: Fulfillment[];
  fulfillmentAttempts: Map<string, AttemptEntry[]>;
}

const NO_FULFILLMENTS: JobFulfillments = { fulfillments: [], fulfillmentAttempts: new Map() };

/**
 * A `sync_job.*` event. The fulfillments are the job's at that moment. A job gets fulfillments only
 * once it is completed (they are found by the order id its completion recorded), and a completed
 * job never changes again, so the worker's and the routing's events carry none.
 */
export function syncJobEvent(type: `sync_job.${'created' | 'completed' | 'failed' | 'dead' | 'retried'}`, job: SyncJob, fulfillments: JobFulfillments = NO_FULFILLMENTS): NewEvent {
  return { ownerId: job.ownerId, resellerStoreId: job.resellerStoreId, type, object: presentDetail({ job, ...fulfillments }) };
}

/** A `fulfillment.*` event: the fulfillment as its job's GET shows it, with its attempts' timeline. */
export function fulfillmentEvent(type: 'fulfillment.completed' | 'fulfillment.dead', fulfillment: Fulfillment, timeline: AttemptEntry[]): NewEvent {
  return { ownerId: fulfillment.ownerId, resellerStoreId: fulfillment.resellerStoreId, type, object: presentFulfillment(fulfillment, timeline) };
}

export interface UnmatchedOrder {
  ownerId: string;
  resellerStoreId: string;
  externalOrderId: string;
  lines: Pick<OrderLine, 'sku' | 'title' | 'vendor' | 'quantity'>[];
}

export function orderUnmatchedEvent({ ownerId, resellerStoreId, externalOrderId, lines }: UnmatchedOrder): NewEvent {
  return {
    ownerId,
    resellerStoreId,
    type: 'order.unmatched',
    object: { resellerStoreId, externalOrderId, lines: lines.map(({ sku, title, vendor, quantity }) => ({ sku, title, vendor, quantity })) },
  };
}

export interface ReconciledOrder {
  ownerId: string;
  resellerStoreId: string;
  externalOrderId: string;
  syncJobIds: string[];
}

/** For reconciliation: append it with the jobs it created, in the same transaction. */
export function orderReconciledEvent({ ownerId, resellerStoreId, externalOrderId, syncJobIds }: ReconciledOrder): NewEvent {
  return { ownerId, resellerStoreId, type: 'order.reconciled', object: { resellerStoreId, externalOrderId, syncJobIds } };
}

export function pingEvent(ownerId: string, webhookEndpointId: string): NewEvent {
  return { ownerId, resellerStoreId: null, type: 'ping', object: { webhookEndpointId } };
}
