/**
 * The closed vocabularies the API shares with the database and the domain, each written once: the
 * contract's zod enums, the entities' enum columns and the lifecycle machine's states come from
 * these lists. Plain constants, no imports, so machines/ can use them and stay pure.
 */

export const PLATFORMS = ['platform_a', 'platform_b', 'custom'] as const;
export type Platform = (typeof PLATFORMS)[number];

/**
 * A sync job's status (interface.md 2.3: exactly these five). Its lifecycle is the retried-work
 * machine's (machines/attempt.machine.ts): pending → processing → completed | failed → … → dead.
 */
export const SYNC_JOB_STATUSES = ['pending', 'processing', 'completed', 'failed', 'dead'] as const;
export type SyncJobStatus = (typeof SYNC_JOB_STATUSES)[number];

/**
 * A fulfillment's status: the same lifecycle plus `skipped` (terminal, never retried), a
 * fulfillment that must not be sent, e.g. tracking without the number its reseller platform needs.
 */
export const FULFILLMENT_STATUSES = ['pending', 'processing', 'completed', 'failed', 'dead', 'skipped'] as const;
export type FulfillmentStatus = (typeof FULFILLMENT_STATUSES)[number];

/**
 * Every state of the retried-work lifecycle (machines/attempt.machine.ts), which each kind's
 * statuses are a subset of; not a resource's list (a kind never reaches a state its list lacks).
 */
export type AttemptStatus = SyncJobStatus | FulfillmentStatus;

/** What started one attempt of retried work (its timeline entry); `recovered`: the previous attempt's worker was lost. */
export const ATTEMPT_TRIGGERS = ['initial', 'automatic_retry', 'manual_retry', 'recovered'] as const;
export type AttemptTrigger = (typeof ATTEMPT_TRIGGERS)[number];

export const ATTEMPT_OUTCOMES = ['succeeded', 'failed', 'in_progress'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

export const PRICING_MODES = ['percentage', 'field_rules'] as const;
export type PricingMode = (typeof PRICING_MODES)[number];

export const API_KEY_ENVIRONMENTS = ['live', 'test'] as const;
export type ApiKeyEnvironment = (typeof API_KEY_ENVIRONMENTS)[number];

/**
 * A cancellation's own lifecycle (order-changes.md): the attempt lifecycle without `skipped`. A
 * cancellation that reached an outcome is `completed`, whatever the outcome; `failed` and `dead`
 * mean no outcome could be reached.
 */
export const CANCELLATION_STATUSES = ['pending', 'processing', 'completed', 'failed', 'dead'] as const;
export type CancellationStatus = (typeof CANCELLATION_STATUSES)[number];

/** Where the supplier order stood when a cancellation reached it. */
export const CANCELLATION_OUTCOMES = ['cancelled', 'not_placed', 'too_late', 'unsupported'] as const;
export type CancellationOutcome = (typeof CANCELLATION_OUTCOMES)[number];

/** What a cancellation covers: the job's whole supplier order, or some of its lines. */
export const CANCELLATION_SCOPES = ['order', 'lines'] as const;
export type CancellationScope = (typeof CANCELLATION_SCOPES)[number];
