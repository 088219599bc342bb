import type { CancellationOutcome } from '../../contract/enums.ts';
import type { AttemptEntry } from '../attempts/entity.ts';
import { iso, isoOrNull } from '../shared/time.ts';
import type { Cancellation } from './entity.ts';

/** A cancellation with its attempts' timeline (oldest first), as its job's GET shows it. */
export interface CancellationView {
  cancellation: Cancellation;
  timeline: AttemptEntry[];
}

function presentTimelineEntry(entry: AttemptEntry) {
  return {
    attempt: entry.attempt,
    trigger: entry.trigger,
    startedAt: iso(entry.startedAt),
    finishedAt: isoOrNull(entry.finishedAt),
    durationMs: entry.finishedAt ? entry.finishedAt.getTime() - entry.startedAt.getTime() : null,
    outcome: entry.outcome,
    errorMessage: entry.errorMessage ?? null,
    platformStatus: entry.platformStatus ?? null,
    request: entry.request ?? null,
    response: entry.response ?? null,
    cancellationOutcome: (entry.result ?? null) as CancellationOutcome | null,
  };
}

/** A cancellation as `GET /v1/sync_jobs/{id}` lists it in `cancellations`. */
export function presentCancellation({ cancellation, timeline }: CancellationView) {
  return {
    id: cancellation.id,
    status: cancellation.status,
    outcome: (cancellation.outcome ?? null) as CancellationOutcome | null,
    scope: cancellation.scope,
    lines: cancellation.lines.map(({ sku, quantity }) => ({ sku, quantity })),
    reason: cancellation.reason ?? null,
    attempts: cancellation.attempts,
    errorMessage: cancellation.errorMessage ?? null,
    requestedAt: iso(cancellation.createdAt),
    completedAt: isoOrNull(cancellation.completedAt),
    nextRetryAt: cancellation.status === 'failed' ? isoOrNull(cancellation.nextRetryAt) : null,
    timeline: timeline.map(presentTimelineEntry),
  };
}
