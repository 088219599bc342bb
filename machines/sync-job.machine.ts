import {
  createAttemptLifecycle,
  type AttemptContext,
  type AttemptEvent,
  type AttemptState,
  type PersistedAttempt,
} from './attempt.machine.ts';

export { MAX_AUTO_RETRIES, WORKER_LOST_ERROR, nextRetryDelayMs } from './attempt.machine.ts';

/** One order placed on a source store; on success it keeps the source store's order id. */
export const syncJobLifecycle = createAttemptLifecycle('syncJob', 'sourceOrderId');

export type { SyncJobStatus } from '../contract/enums.ts';
export type SyncJobContext = AttemptContext<'sourceOrderId'>;
export type SyncJobEvent = AttemptEvent<'sourceOrderId'>;
export type PersistedSyncJob = PersistedAttempt<'sourceOrderId'>;
export type SyncJobState = AttemptState<'sourceOrderId'>;

export const syncJobMachine = syncJobLifecycle.machine;

export function initialSyncJob(): SyncJobState {
  return syncJobLifecycle.initial();
}

/** The job after `event`, or null when its current status does not allow the event. */
export function applySyncJobEvent(persisted: PersistedSyncJob, event: SyncJobEvent): SyncJobState | null {
  return syncJobLifecycle.apply(persisted, event);
}

export function canApply(persisted: PersistedSyncJob, event: SyncJobEvent): boolean {
  return syncJobLifecycle.canApply(persisted, event);
}
