import type { NewEvent } from '../events/types.ts';

/** `ping`, from `POST /v1/webhook_endpoints/{id}/test`: for that endpoint only. */
export function pingEvent(ownerId: string, webhookEndpointId: string): NewEvent {
  return { ownerId, resellerStoreId: null, type: 'ping', object: { webhookEndpointId } };
}
