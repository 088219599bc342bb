import type { Dispatcher } from 'undici';
import type { Logger } from 'pino';
import { applyDeliveryEvent, type DeliveryEvent } from '../../machines/delivery.machine.ts';
import type { AppContext } from '../context.ts';
import { sqlOf } from '../db/sql.ts';
import { newMessageId } from '../queue/queue.ts';
import { guardedAgent } from '../shared/url-safety.ts';
import { loadDelivery, markEndpointFailing, markEndpointHealthy, recordAttempt, type AttemptRecord, type DeliveryWork } from '../webhook-endpoints/repository.ts';
import { attemptDelivery, type AttemptResult } from '../webhook-endpoints/sender.ts';
import { signingSecrets } from '../webhook-endpoints/signing.ts';

/**
 * Deliveries in flight to one endpoint at most, across every worker process (pg-boss
 * `groupConcurrency`, each delivery's message being in its endpoint's group): a slow or dead
 * endpoint holds at most this many of a process's WEBHOOK_DELIVERY_CONCURRENCY slots, and the rest
 * keep serving other endpoints.
 */
export const DELIVERIES_PER_ENDPOINT = 4;

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

  constructor(private readonly ctx: AppContext) {
    this.dispatcher = guardedAgent(ctx.config.urlPolicy, { keepAliveTimeout: 10_000 });
  }

  /** Rejects only when the outcome could not be recorded: pg-boss then delivers the message again. */
  async handle({ messageId, deliveryId }: DeliveryMessage): Promise<void> {
    const log = this.ctx.logger.child({ delivery_id: deliveryId, message_id: messageId });
    const work = await loadDelivery(sqlOf(this.ctx.orm), deliveryId);
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
    const result = await attemptDelivery(this.dispatcher, {
      url: work.endpoint.url,
      webhookId: work.eventId,
      body: work.payload,
      secrets: signingSecrets(this.ctx.secrets, work.endpoint, new Date()),
      timeoutMs: this.ctx.config.webhooks.deliveryTimeoutMs,
    });
    this.ctx.metrics.deliveryAttemptDuration.observe({ outcome: result.outcome }, result.durationMs / 1000);
    await this.record(work, { type: result.ok ? 'SUCCEED' : 'FAIL' }, result, logged);
  }

  private async record(work: DeliveryWork, event: DeliveryEvent, result: AttemptResult | null, log: Logger): Promise<void> {
    const { deliveryScheduleMs, disableAfterMs } = this.ctx.config.webhooks;
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
        return { disabled: await markEndpointFailing(trx, work.endpointId, now, new Date(now.getTime() - disableAfterMs), reason) };
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

/** `5 days`, `2 hours`, `1500 ms`: the disable window as people read it. */
function describeDuration(ms: number): string {
  const units: [number, string][] = [[86_400_000, 'day'], [3_600_000, 'hour'], [60_000, 'minute'], [1_000, 'second']];
  for (const [size, name] of units) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${name}${ms === size ? '' : 's'}`;
  }
  return `${ms} ms`;
}
