import type { EntityManager } from '@mikro-orm/postgresql';
import { recordAudit, SYSTEM_ACTOR, type AuditRecord } from '../audit-log/service.ts';
import type { AppContext } from '../context.ts';
import type { Tracking } from '../orders/types.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';
import { newId } from '../shared/ids.ts';
import { Fulfillment } from './entity.ts';
import { initialProjection } from './lifecycle.ts';

export class FulfillmentService {
  constructor(private readonly ctx: AppContext) {}

  /**
   * Records a supplier's fulfillment of a job and queues its propagation, once per `dedupeKey`:
   * a redelivered webhook finds the existing record. Concurrent deliveries are serialised by an
   * advisory lock; the unique index is the backstop.
   */
  async receive(job: SyncJob, tracking: Tracking, dedupeKey: string): Promise<{ fulfillment: Fulfillment; created: boolean }> {
    const result = await this.ctx.orm.em.fork().transactional(async (em) => {
      await em.execute('select pg_advisory_xact_lock(hashtext(?))', [`fulfillment:${job.id}:${dedupeKey}`]);
      const existing = await em.findOne(Fulfillment, { syncJobId: job.id, dedupeKey });
      if (existing) return { fulfillment: existing, created: false };
      const now = new Date();
      const fulfillment = em.create(Fulfillment, {
        ...initialProjection(now),
        id: newId('fulfillment'),
        ownerId: job.ownerId,
        resellerStoreId: job.resellerStoreId,
        syncJobId: job.id,
        dedupeKey,
        tracking,
        queueMessageId: null,
        createdAt: now,
        updatedAt: now,
      } as Fulfillment);
      await this.schedule(em, fulfillment);
      this.audit(em, fulfillment, 'fulfillment.received', { trackingNumbers: tracking.numbers });
      return { fulfillment, created: true };
    });
    if (result.created) this.ctx.metrics.attemptTransitions.inc({ kind: 'fulfillment', status: 'pending' });
    return result;
  }

  async schedule(em: EntityManager, fulfillment: Fulfillment, delayMs = 0): Promise<void> {
    fulfillment.queueMessageId = await this.ctx.queue.enqueue(em, 'fulfillment', { fulfillmentId: fulfillment.id }, delayMs);
  }

  audit(em: EntityManager, fulfillment: Fulfillment, action: string, metadata: Record<string, unknown> = {}): void {
    recordAudit(em, fulfillmentAuditRecord(fulfillment, action, metadata));
  }

}

/** A fulfillment's audit entry: every one names its sync job. */
export function fulfillmentAuditRecord(fulfillment: Fulfillment, action: string, metadata: Record<string, unknown> = {}): AuditRecord {
  return {
    ownerId: fulfillment.ownerId,
    resellerStoreId: fulfillment.resellerStoreId,
    action,
    resourceType: 'fulfillment',
    resourceId: fulfillment.id,
    actorId: SYSTEM_ACTOR,
    metadata: { syncJobId: fulfillment.syncJobId, ...metadata },
  };
}
