import { insertAudit } from '../audit-log/repository.ts';
import { fulfillmentKind } from '../attempts/kinds.ts';
import type { AppContext } from '../context.ts';
import type { Tracking } from '../orders/types.ts';
import { newMessageId } from '../queue/queue.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';
import { newId } from '../shared/ids.ts';
import { fulfillmentAuditRecord } from './attempt.ts';
import type { Fulfillment } from './entity.ts';
import { FulfillmentRepository } from './repository.ts';

export class FulfillmentService {
  private readonly fulfillments: FulfillmentRepository;

  constructor(private readonly ctx: AppContext) {
    this.fulfillments = new FulfillmentRepository(ctx.orm);
  }

  /**
   * Records a supplier's fulfillment of a job and queues its propagation, once per `dedupeKey`:
   * a redelivered webhook finds the existing record. Concurrent deliveries are serialised by an
   * advisory lock; the unique index is the backstop.
   */
  async receive(job: SyncJob, tracking: Tracking, dedupeKey: string): Promise<{ fulfillment: Fulfillment; created: boolean }> {
    const result = await this.fulfillments.transaction(async (trx) => {
      const existing = await this.fulfillments.lockAndFind(trx, job.id, dedupeKey);
      if (existing) return { fulfillment: existing, created: false };
      const now = new Date();
      const fulfillment = {
        ...fulfillmentKind.initialColumns(now),
        id: newId('fulfillment'),
        ownerId: job.ownerId,
        resellerStoreId: job.resellerStoreId,
        syncJobId: job.id,
        dedupeKey,
        tracking,
        queueMessageId: newMessageId(),
        version: 1,
        createdAt: now,
        updatedAt: now,
      } as Fulfillment;
      await this.fulfillments.insert(trx, fulfillment);
      await insertAudit(trx, [fulfillmentAuditRecord(fulfillment, 'fulfillment.received', { trackingNumbers: tracking.numbers })], now);
      await this.ctx.queue.insertIn(trx, 'fulfillment', [{ id: fulfillment.queueMessageId!, message: fulfillmentKind.message(fulfillment.id) }]);
      return { fulfillment, created: true };
    });
    if (result.created) this.ctx.metrics.attemptTransitions.inc({ kind: 'fulfillment', status: 'pending' });
    return result;
  }
}
