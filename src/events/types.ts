import type { EventType } from '../../contract/events.ts';

export type { EventType };

/**
 * An event to append to the outbox (src/events/outbox.ts), in the transaction of the change it
 * reports. Each feature builds its own from its data (src/<feature>/events.ts), `object` presented
 * as the resource's GET shows it.
 */
export interface NewEvent {
  ownerId: string;
  /** Null only for `ping`. */
  resellerStoreId: string | null;
  type: EventType;
  /** `data.object`: the resource as its GET returns it at the moment of the change. */
  object: object;
}
