import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { ATTEMPT_OUTCOMES, ATTEMPT_TRIGGERS, type AttemptTrigger } from '../../contract/enums.ts';
import { WORKER_LOST_ERROR } from '../../machines/attempt.machine.ts';
import type { ExchangeRequest, ExchangeResponse } from '../platforms/exchange.ts';

/**
 * One attempt at a sync job or a fulfillment: its timeline entry. The worker writes it in the same
 * statement as the transition it belongs to: the row taken (`in_progress`), then the outcome
 * recorded (`succeeded` / `failed`, with the platform's HTTP status and the id it produced). Kept
 * for every attempt: a manual retry starts new ones (attempt numbers keep counting), and an attempt
 * whose worker was lost is closed as failed when the job is taken again (`recovered`).
 */
export const AttemptEntry = defineEntity({
  name: 'AttemptEntry',
  tableName: 'attempts',
  properties: {
    /** The sync job's or fulfillment's id. */
    rowId: p.string().primary(),
    attempt: p.integer().primary(),
    /** The kind's name (`defineAttemptKind` `name`: `sync_job`, `fulfillment`): any kind, so adding one changes no core table. */
    kind: p.text(),
    ownerId: p.string(),
    resellerStoreId: p.string(),
    trigger: p.enum(ATTEMPT_TRIGGERS),
    startedAt: p.datetime(),
    finishedAt: p.datetime().nullable(),
    outcome: p.enum(ATTEMPT_OUTCOMES),
    errorMessage: p.text().nullable(),
    /** The HTTP status the platform answered with; null when no answer came (timeout, network) or no call was made. */
    platformStatus: p.smallint().nullable(),
    /** What a successful attempt produced: the source order id (sync job) or the reseller fulfillment id. */
    result: p.string().nullable(),
    /** What the attempt's last platform call sent, redacted and bounded (src/platforms/exchange.ts); null when it made none. */
    request: p.json<ExchangeRequest>().nullable(),
    /** What came back to that call (status and body excerpt); null when no answer came or no call was made. */
    response: p.json<ExchangeResponse>().nullable(),
  },
});
export type AttemptEntry = InferEntity<typeof AttemptEntry>;

/** The error an attempt is closed with when its worker was lost mid-attempt (the machine's LOSE records the same). */
export const WORKER_LOST = WORKER_LOST_ERROR;

/** Which attempt a TAKE starts, from the row as it was before the TAKE. */
export function triggerOf(status: string, attemptsBefore: number): AttemptTrigger {
  if (status === 'processing') return 'recovered';
  if (status === 'failed') return 'automatic_retry';
  return attemptsBefore === 0 ? 'initial' : 'manual_retry';
}
