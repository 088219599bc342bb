/**
 * The lifecycle of one webhook delivery (events.md): `pending` while attempts remain on the
 * schedule, `succeeded` after a 2xx, `failed` once the schedule ran out; a failed delivery can be
 * retried by hand with a fresh schedule. Pure: the caller supplies the schedule and persists the
 * state it gets back.
 */

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryState {
  status: DeliveryStatus;
  /** Every attempt ever made. */
  attempts: number;
  /** Attempts made since the schedule started (creation or the last manual retry). */
  scheduleAttempts: number;
}

export type DeliveryEvent =
  /** The receiver answered 2xx in time. */
  | { type: 'SUCCEED' }
  /** An attempt failed (other status, timeout, connection error, redirect, refused address). */
  | { type: 'FAIL' }
  /** No attempt can be made (the endpoint was disabled): failed at once, retriable by hand. */
  | { type: 'ABANDON' }
  | { type: 'RETRY' };

export interface DeliveryTransition {
  state: DeliveryState;
  /** Wait this long, then attempt again; null when no attempt follows. */
  nextAttemptInMs: number | null;
}

/**
 * `scheduleMs[i]` is the delay before attempt i + 1 of a schedule, so its length is the number of
 * attempts. Null when the event does not apply to the state (e.g. a retry of a pending delivery).
 */
export function applyDeliveryEvent(state: DeliveryState, event: DeliveryEvent, scheduleMs: readonly number[]): DeliveryTransition | null {
  switch (event.type) {
    case 'SUCCEED':
      if (state.status !== 'pending') return null;
      return { state: { status: 'succeeded', attempts: state.attempts + 1, scheduleAttempts: state.scheduleAttempts + 1 }, nextAttemptInMs: null };
    case 'FAIL': {
      if (state.status !== 'pending') return null;
      const scheduleAttempts = state.scheduleAttempts + 1;
      const nextAttemptInMs = scheduleMs[scheduleAttempts] ?? null;
      return { state: { status: nextAttemptInMs === null ? 'failed' : 'pending', attempts: state.attempts + 1, scheduleAttempts }, nextAttemptInMs };
    }
    case 'ABANDON':
      if (state.status !== 'pending') return null;
      return { state: { ...state, status: 'failed' }, nextAttemptInMs: null };
    case 'RETRY':
      if (state.status !== 'failed') return null;
      return { state: { ...state, status: 'pending', scheduleAttempts: 0 }, nextAttemptInMs: scheduleMs[0] ?? 0 };
  }
}
