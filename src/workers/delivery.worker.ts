import type { Dispatcher } from 'undici';
import type { Logger } from 'pino';
import { applyDeliveryEvent, type DeliveryEvent } from '../../machines/delivery.machine.ts';
import type { Config } from '../config/index.ts';
import type { Orm } from '../db/orm.ts';
import type { Metrics } from '../metrics/index.ts';
import type { Queue } from '../queue/queue.ts';
import type { SecretBox } from '../shared/secrets.ts';
import { sqlOf } from '../db/sql.ts';
import { newMessageId } from '../queue/queue.ts';
import { guardedAgent } from '../shared/url-safety.ts';
import {
  deleteOrphanDelivery,
  loadDelivery,
  markEndpointFailing,
  markEndpointHealthy,
  moveToMessage,
  recordAttempt,
  takeSendingSlot,
  type AttemptRecord,
  type DeliveryWork,
} from '../webhook-endpoints/repository.ts';
import { attemptDelivery, type AttemptResult } from '../webhook-endpoints/sender.ts';
import { signingSecrets } from '../webhook-endpoints/signing.ts';

/**
 * Deliveries in flight to one endpoint at most, across every worker process: a slow or dead
 * endpoint holds at most this many of a process's WEBHOOK_DELIVERY_CONCURRENCY slots, and the rest
 * keep serving other endpoints. pg-boss's `groupConcurrency` (each delivery's message is in its
 * endpoint's group) keeps fetches from taking more, but each fetch judges on its own, so fetches
 * racing each other overshoot it; a sending slot taken under the endpoint's row lock
 * (`takeSendingSlot`) makes the bound exact, and a message that gets none waits its turn.
 */
export const DELIVERIES_PER_ENDPOINT = 4;

/**
 * Deliveries in flight to all of one owner's endpoints at most, across every worker process: a
 * tenant with many unresponsive endpoints holds no more sending slots than one with a single one,
 * so it cannot take all of a process's WEBHOOK_DELIVERY_CONCURRENCY slots from the other tenants.
 * Its other deliveries wait their turn (re-queued, holding no slot). Twice an endpoint's, so one of
 * its endpoints hanging leaves its others room.
 */
export const DELIVERIES_PER_OWNER = 2 * DELIVERIES_PER_ENDPOINT;

/** How long a delivery that found its endpoint's slots taken waits before it tries again (plus up to as much jitter). */
const BUSY_ENDPOINT_WAIT_MS = 500;

/** A sending slot is held past the attempt's timeout by this much before it counts as abandoned (its worker died). */
const SLOT_LEASE_MARGIN_MS = 30_000;

/** A queue message naming the delivery it may attempt. */
export interface DeliveryMessage {
  messageId: string;
  deliveryId: string;
}

/**
 * Attempts webhook deliveries (events.md): read the delivery with its event and endpoint, POST it
 * signed outside any transaction, then record the outcome in one transaction with the next
 * attempt's queue message (the schedule of WEBHOOK_DELIVERY_SCHEDULE_MS) and the endpoint's health.
 * Only the message id stored on a delivery may attempt it, so stale messages (a manual retry, a
 * deleted endpoint) do nothing.
 */
export class DeliveryWorker {
  /** Keeps connections to receivers alive between deliveries, and refuses forbidden addresses as it connects. */
  private readonly dispatcher: Dispatcher;
  /** Attempts of this process in flight to endpoints whose last attempts failed (see `failingShare`). */
  private failingInFlight = 0;

  constructor(private readonly ctx: { config: Pick<Config, 'urlPolicy' | 'webhooks'>; orm: Orm; logger: Logger; metrics: Metrics; queue: Queue; secrets: SecretBox }) {
    this.dispatcher = guardedAgent(ctx.config.urlPolicy, { keepAliveTimeout: 10_000 });
  }

  /** Rejects only when the outcome could not be recorded: pg-boss then delivers the message again. */
  async handle({ messageId, deliveryId }: DeliveryMessage): Promise<void> {
    const log = this.ctx.logger.child({ delivery_id: deliveryId, message_id: messageId });
    const work = await loadDelivery(sqlOf(this.ctx.orm), deliveryId);
    if (!work && (await deleteOrphanDelivery(sqlOf(this.ctx.orm), deliveryId))) {
      log.info('delivery to a deleted endpoint removed');
      return;
    }
    if (!work || work.queueMessageId !== messageId || work.status !== 'pending') {
      log.debug('stale delivery message ignored');
      return;
    }
    const logged = log.child({ endpoint_id: work.endpointId, event_id: work.eventId });
    // A disabled endpoint gets nothing: what was queued for it fails at once, and can be retried by hand once it is enabled.
    if (work.endpoint.status !== 'enabled') {
      await this.record(work, { type: 'ABANDON' }, null, logged);
      return;
    }
    // Counted before the first wait, so racing handlers of this process cannot overshoot the share.
    const failing = this.isFailing(work.endpoint, new Date());
    if (failing && this.failingInFlight >= this.failingShare) {
      await this.waitTurn(work, logged);
      return;
    }
    if (failing) this.failingInFlight++;
    let result: AttemptResult;
    try {
      if (!(await this.takeSlot(work))) {
        await this.waitTurn(work, logged);
        return;
      }
      result = await attemptDelivery(this.dispatcher, {
        url: work.endpoint.url,
        webhookId: work.eventId,
        body: work.payload,
        secrets: signingSecrets(this.ctx.secrets, work.endpoint, new Date()),
        timeoutMs: this.ctx.config.webhooks.deliveryTimeoutMs,
      });
    } finally {
      if (failing) this.failingInFlight--;
    }
    this.ctx.metrics.deliveryAttemptDuration.observe({ outcome: result.outcome }, result.durationMs / 1000);
    await this.record(work, { type: result.ok ? 'SUCCEED' : 'FAIL' }, result, logged);
  }

  /**
   * How many of this process's sending slots attempts to failing endpoints may hold at once: half.
   * However many tenants' endpoints hang, the other half keeps serving endpoints that answer.
   */
  private get failingShare(): number {
    return Math.max(1, Math.floor(this.ctx.config.webhooks.deliveryConcurrency / 2));
  }

  /**
   * Whether the endpoint's run of failures is going on, by the rule that disabling follows
   * (`markEndpointFailing`): its last failure (or, never recorded, the run's start) is within a
   * delivery's span. An endpoint whose last failure is older had a quiet spell: the run is over, its
   * next failure starts a new one, and meanwhile it is not held to the failing share.
   */
  private isFailing(endpoint: DeliveryWork['endpoint'], now: Date): boolean {
    if (endpoint.failingSince === null) return false;
    const { deliveryScheduleMs, deliveryTimeoutMs } = this.ctx.config.webhooks;
    const lastFailedAt = endpoint.lastFailedAt ?? endpoint.failingSince;
    return lastFailedAt.getTime() >= now.getTime() - deliverySpanMs(deliveryScheduleMs, deliveryTimeoutMs);
  }

  /** One of the endpoint's DELIVERIES_PER_ENDPOINT sending slots, within its owner's DELIVERIES_PER_OWNER; on success the delivery's version moved on. */
  private async takeSlot(work: DeliveryWork): Promise<boolean> {
    const now = new Date();
    const leaseUntil = new Date(now.getTime() + this.ctx.config.webhooks.deliveryTimeoutMs + SLOT_LEASE_MARGIN_MS);
    const taken = await sqlOf(this.ctx.orm)
      .transaction()
      .execute((trx) => takeSendingSlot(trx, {
          ownerId: work.ownerId,
          endpointId: work.endpointId,
          deliveryId: work.id,
          version: work.version,
          limit: DELIVERIES_PER_ENDPOINT,
          ownerLimit: DELIVERIES_PER_OWNER,
          now,
          leaseUntil,
        }));
    if (taken) work.version++;
    return taken;
  }

  /** The same attempt, a little later, under a new queue message; no attempt is counted. */
  private async waitTurn(work: DeliveryWork, log: Logger): Promise<void> {
    const queueMessageId = newMessageId();
    const delayMs = BUSY_ENDPOINT_WAIT_MS + Math.floor(Math.random() * BUSY_ENDPOINT_WAIT_MS);
    const moved = await sqlOf(this.ctx.orm)
      .transaction()
      .execute(async (trx) => {
        if (!(await moveToMessage(trx, work.id, work.version, queueMessageId, new Date()))) return false;
        await this.ctx.queue.insertIn(trx, 'webhookDelivery', [{ id: queueMessageId, message: { deliveryId: work.id }, delayMs, groupId: work.endpointId }]);
        return true;
      });
    log.debug({ moved, retry_in_ms: delayMs }, "every sending slot of the endpoint or of its owner is taken; the delivery waits its turn");
  }

  private async record(work: DeliveryWork, event: DeliveryEvent, result: AttemptResult | null, log: Logger): Promise<void> {
    const { deliveryScheduleMs, disableAfterMs, deliveryTimeoutMs } = this.ctx.config.webhooks;
    const next = applyDeliveryEvent(work, event, deliveryScheduleMs);
    if (!next) return;
    const now = new Date();
    const queueMessageId = next.nextAttemptInMs === null ? null : newMessageId();
    const record: AttemptRecord = {
      id: work.id,
      version: work.version,
      ...next.state,
      lastAttemptAt: result ? now : null,
      nextAttemptAt: next.nextAttemptInMs === null ? null : new Date(now.getTime() + next.nextAttemptInMs),
      lastResponseStatus: result?.responseStatus ?? null,
      lastError: result ? result.error : 'not sent: the endpoint is disabled',
      lastResponseExcerpt: result?.responseExcerpt ?? null,
      durationMs: result?.durationMs ?? null,
      queueMessageId,
      updatedAt: now,
    };
    const outcome = await sqlOf(this.ctx.orm)
      .transaction()
      .execute(async (trx) => {
        if (!(await recordAttempt(trx, record))) return null;
        if (queueMessageId !== null) {
          await this.ctx.queue.insertIn(trx, 'webhookDelivery', [
            { id: queueMessageId, message: { deliveryId: work.id }, delayMs: next.nextAttemptInMs!, groupId: work.endpointId },
          ]);
        }
        if (!result) return { disabled: false };
        if (result.ok) {
          await markEndpointHealthy(trx, work.endpointId);
          return { disabled: false };
        }
        const reason = `Every delivery failed for ${describeDuration(disableAfterMs)}; enable the endpoint again once it answers.`;
        const quietAfterMs = deliverySpanMs(deliveryScheduleMs, deliveryTimeoutMs);
        return {
          disabled: await markEndpointFailing(trx, work.endpointId, now, new Date(now.getTime() - disableAfterMs), new Date(now.getTime() - quietAfterMs), reason),
        };
      });
    if (!outcome) {
      log.warn('delivery outcome not recorded: another worker moved the delivery meanwhile');
      return;
    }
    if (outcome.disabled) log.warn('webhook endpoint disabled: its deliveries have all failed for too long');
    const fields = { status: record.status, attempts: record.attempts, response_status: record.lastResponseStatus, duration_ms: record.durationMs };
    if (record.status === 'succeeded') log.info(fields, 'webhook delivered');
    else if (record.status === 'pending') log.warn({ ...fields, error: record.lastError, retry_in_ms: next.nextAttemptInMs }, 'webhook delivery attempt failed; retry scheduled');
    else log.warn({ ...fields, error: record.lastError }, 'webhook delivery failed');
    if (record.status !== 'pending') this.ctx.metrics.deliveries.inc({ outcome: record.status });
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }
}

/**
 * The longest a delivery's attempts can span, first to last (every delay of the schedule, and every
 * attempt running to its timeout): while an endpoint's deliveries keep failing, no two failures are
 * further apart than this, so a longer gap is a quiet spell that ends a run of failures (about 27.6
 * hours with the default schedule).
 */
function deliverySpanMs(scheduleMs: readonly number[], timeoutMs: number): number {
  return scheduleMs.reduce((sum, delayMs) => sum + delayMs + timeoutMs, 0);
}

/** `5 days`, `2 hours`, `1500 ms`: the disable window as people read it. */
function describeDuration(ms: number): string {
  const units: [number, string][] = [[86_400_000, 'day'], [3_600_000, 'hour'], [60_000, 'minute'], [1_000, 'second']];
  for (const [size, name] of units) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${name}${ms === size ? '' : 's'}`;
  }
  return `${ms} ms`;
}
