import { applySyncJobEvent, initialSyncJob, type SyncJobEvent } from '../../machines/sync-job.machine.ts';
import { persistedOf, projectAttempt } from '../shared/attempt-row.ts';
import type { SyncJob } from './entity.ts';

export function initialProjection(at: Date): Partial<SyncJob> {
  const job: Partial<SyncJob> = {};
  projectAttempt(job, initialSyncJob(), 'sourceOrderId', at);
  return job;
}

/** Applies an event to a job; false (and no change) when the machine refuses it. */
export function transitionJob(job: SyncJob, event: SyncJobEvent, at: Date): boolean {
  const next = applySyncJobEvent(persistedOf(job), event);
  if (!next) return false;
  projectAttempt(job, next, 'sourceOrderId', at);
  return true;
}
