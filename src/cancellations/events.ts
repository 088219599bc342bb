import type { AttemptEntry } from '../attempts/entity.ts';
import { findAttemptsIn } from '../attempts/repository.ts';
import type { Trx } from '../db/sql.ts';
import type { NewEvent } from '../events/types.ts';
import type { EventType } from '../../contract/events.ts';
import { presentDetail } from '../sync-jobs/present.ts';
import type { Cancellation } from './entity.ts';
import type { AttemptTimelines } from './ports.ts';
import type { CancellationView } from './present.ts';
import { cancellationsIn, jobDetailsIn, type CancellationRepository } from './repository.ts';

function withTimelines(cancellations: Cancellation[], entries: AttemptEntry[]): CancellationView[] {
  return cancellations.map((cancellation) => ({ cancellation, timeline: entries.filter((entry) => entry.rowId === cancellation.id) }));
}

/** A job's cancellations with their timelines, oldest first (its GET's `cancellations`). */
export async function cancellationsOfJob(timelines: AttemptTimelines, repository: CancellationRepository, syncJobId: string): Promise<CancellationView[]> {
  const cancellations = await repository.listForJob(syncJobId);
  return withTimelines(cancellations, await timelines.find(cancellations.map((c) => c.id)));
}

/**
 * The cancellations of these jobs with their timelines, as this transaction sees them (its own writes
 * included), each job's oldest first, by job id: one read, and one more for the timelines only when
 * there are any. For the `sync_job.*` events written in the transaction (src/sync-jobs/events.ts).
 */
export async function cancellationViewsIn(trx: Trx, syncJobIds: string[]): Promise<Map<string, CancellationView[]>> {
  const cancellations = await cancellationsIn(trx, syncJobIds);
  const byJob = new Map<string, CancellationView[]>();
  for (const view of withTimelines(cancellations, await findAttemptsIn(trx, cancellations.map((c) => c.id)))) {
    byJob.set(view.cancellation.syncJobId, [...(byJob.get(view.cancellation.syncJobId) ?? []), view]);
  }
  return byJob;
}

/**
 * An event whose `data.object` is the sync job as its GET shows it at this point of the
 * transaction: with its fulfillments and its cancellations (events.md), the transaction's own
 * writes included. Null when the job is gone.
 */
export async function jobEventIn(trx: Trx, type: EventType, syncJobId: string): Promise<NewEvent | null> {
  return (await jobEventsIn(trx, [{ type, syncJobId }]))[0] ?? null;
}

/**
 * `jobEventIn` for several events at once, in their order (a job gone has none): four reads
 * whatever their number, so an outcome group's events cost the same statements as one event.
 */
export async function jobEventsIn(trx: Trx, requests: { type: EventType; syncJobId: string }[]): Promise<NewEvent[]> {
  const syncJobIds = [...new Set(requests.map((request) => request.syncJobId))];
  const details = await jobDetailsIn(trx, syncJobIds);
  if (details.size === 0) return [];
  const cancellations = await cancellationsIn(trx, [...details.keys()]);
  const fulfillmentIds = [...details.values()].flatMap((detail) => detail.fulfillments.map((f) => f.id));
  const entries = await findAttemptsIn(trx, [...fulfillmentIds, ...cancellations.map((c) => c.id)]);
  return requests.flatMap(({ type, syncJobId }) => {
    const detail = details.get(syncJobId);
    if (!detail) return [];
    const ofJob = cancellations.filter((c) => c.syncJobId === syncJobId);
    const fulfillmentAttempts = new Map(detail.fulfillments.map((f) => [f.id, entries.filter((entry) => entry.rowId === f.id)]));
    return [
      {
        ownerId: detail.job.ownerId,
        resellerStoreId: detail.job.resellerStoreId,
        type,
        object: presentDetail({ job: detail.job, fulfillments: detail.fulfillments, fulfillmentAttempts, cancellations: withTimelines(ofJob, entries) }),
      },
    ];
  });
}
