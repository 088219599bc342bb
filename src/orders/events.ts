import type { NewEvent } from '../events/types.ts';
import type { OrderLine } from './types.ts';

export interface UnmatchedOrder {
  ownerId: string;
  resellerStoreId: string;
  externalOrderId: string;
  lines: Pick<OrderLine, 'sku' | 'title' | 'vendor' | 'quantity'>[];
}

/** `order.unmatched`: the lines of an order that no supplier's vendor tag matched, or more than one did (src/orders/routing.ts). */
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
