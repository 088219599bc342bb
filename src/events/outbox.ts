import type { Trx } from '../db/sql.ts';
import type { Queue } from '../queue/queue.ts';
import { insertEventsWithDeliveries } from './repository.ts';
import type { NewEvent } from './types.ts';

/**
 * The transactional outbox of events (events.md): `append` writes events, with one delivery per
 * subscribed endpoint and each delivery's queue message, in the caller's transaction. So an event
 * exists exactly when the change it reports committed, and its deliveries are attempted at least
 * once however the process dies afterwards.
 */
export class Outbox {
  constructor(
    private readonly queue: Queue,
    /** The schedule's delay before a delivery's first attempt (WEBHOOK_DELIVERY_SCHEDULE_MS), usually 0. */
    private readonly firstAttemptDelayMs: number,
  ) {}

  /**
   * Call it next to the change's audit entry, in its transaction: a Kysely transaction on the hot
   * paths, or `em.getTransactionContext()` inside an ORM transaction.
   */
  async append(trx: Trx, events: NewEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.enqueue(trx, await insertEventsWithDeliveries(trx, events));
  }

  /** A test event for one endpoint only (`POST /v1/webhook_endpoints/{id}/test`); returns its delivery id. */
  async appendForEndpoint(trx: Trx, event: NewEvent, endpointId: string): Promise<string> {
    const deliveries = await insertEventsWithDeliveries(trx, [event], endpointId);
    await this.enqueue(trx, deliveries);
    const [delivery] = deliveries;
    if (!delivery) throw new Error(`no delivery was created for endpoint ${endpointId}`);
    return delivery.id;
  }

  private enqueue(trx: Trx, deliveries: { id: string; endpointId: string; queueMessageId: string }[]): Promise<void> {
    return this.queue.insertIn(
      trx,
      'webhookDelivery',
      deliveries.map((delivery) => ({
        id: delivery.queueMessageId,
        message: { deliveryId: delivery.id },
        delayMs: this.firstAttemptDelayMs,
        groupId: delivery.endpointId,
      })),
    );
  }
}
