import type { CancellationOutcome } from '../../contract/enums.ts';
import type { AttemptEntry } from '../attempts/entity.ts';
import { presentAttempt } from '../attempts/present.ts';
import { iso, isoOrNull } from '../shared/time.ts';
import { shownSku, type Cancellation } from './entity.ts';

/** A cancellation with its attempts' timeline (oldest first), as its job's GET shows it. */
export interface CancellationView {
  cancellation: Cancellation;
  timeline: AttemptEntry[];
}

/** A timeline entry whose result is the outcome the attempt came to. */
function presentTimelineEntry(entry: AttemptEntry) {
  return { ...presentAttempt(entry, 'cancellationOutcome'), cancellationOutcome: (entry.result ?? null) as CancellationOutcome | null };
}

/** A cancellation as `GET /v1/sync_jobs/{id}` lists it in `cancellations`. */
export function presentCancellation({ cancellation, timeline }: CancellationView) {
  return {
    id: cancellation.id,
    status: cancellation.status,
    outcome: (cancellation.outcome ?? null) as CancellationOutcome | null,
    scope: cancellation.scope,
    // By the SKU the supplier holds each line under (order-changes.md), as its pricing made it.
    lines: cancellation.lines.map((line) => ({ sku: shownSku(line), quantity: line.quantity })),
    // Written before a platform_b whole-order PUT (WHOLE_FOR_LINES): said only once the outcome it explains is reached.
    reason: cancellation.outcome == null ? null : (cancellation.reason ?? null),
    attempts: cancellation.attempts,
    errorMessage: cancellation.errorMessage ?? null,
    requestedAt: iso(cancellation.createdAt),
    completedAt: isoOrNull(cancellation.completedAt),
    nextRetryAt: cancellation.status === 'failed' ? isoOrNull(cancellation.nextRetryAt) : null,
    timeline: timeline.map(presentTimelineEntry),
  };
}
