import type { CancellationOutcome } from '../contract/enums.ts';
import {
  createAttemptLifecycle,
  type AttemptContext,
  type AttemptEvent,
  type AttemptState,
  type AttemptStatus,
  type PersistedAttempt,
} from './attempt.machine.ts';

export { MAX_AUTO_RETRIES, nextRetryDelayMs } from './attempt.machine.ts';

/**
 * Cancelling a sync job's supplier order (or some of its lines) on the source store. On success it
 * keeps the outcome reached (`cancelled`, `not_placed`, `too_late`, `unsupported`): every outcome is
 * a success of the attempt, since the supplier side is then known; `failed` and `dead` mean no
 * outcome could be reached. It never skips.
 */
export const cancellationLifecycle = createAttemptLifecycle('cancellation', 'outcome');

export type CancellationStatus = Exclude<AttemptStatus, 'skipped'>;
export type CancellationContext = AttemptContext<'outcome'>;
export type CancellationEvent = AttemptEvent<'outcome'>;
export type PersistedCancellation = PersistedAttempt<'outcome'>;
export type CancellationState = AttemptState<'outcome'>;

export function initialCancellation(): CancellationState {
  return cancellationLifecycle.initial();
}

/** The cancellation after `event`, or null when its current status does not allow it. */
export function applyCancellationEvent(persisted: PersistedCancellation, event: CancellationEvent): CancellationState | null {
  return cancellationLifecycle.apply(persisted, event);
}

export function canApplyCancellationEvent(persisted: PersistedCancellation, event: CancellationEvent): boolean {
  return cancellationLifecycle.canApply(persisted, event);
}

/** The SUCCEED event of an attempt that reached `outcome`. */
export function reached(outcome: CancellationOutcome, at: string): CancellationEvent {
  return { type: 'SUCCEED', outcome, at };
}
