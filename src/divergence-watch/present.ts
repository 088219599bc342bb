import { iso, isoOrNull } from '../shared/time.ts';
import type { ListedDivergence } from './repository.ts';

/** A divergence (an entry of the reseller's to-do list) as its API shows it. */
export function presentDivergence(entry: ListedDivergence) {
  return {
    id: entry.id,
    object: 'divergence' as const,
    type: entry.type,
    status: entry.status,
    resellerStoreId: entry.resellerStoreId,
    syncJobId: entry.syncJobId,
    externalOrderId: entry.externalOrderId,
    subjectId: entry.subjectId,
    since: iso(entry.since),
    detail: entry.detail,
    resolvedAt: isoOrNull(entry.resolvedAt),
    dismissedAt: isoOrNull(entry.dismissedAt),
  };
}
