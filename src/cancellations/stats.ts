import { CANCELLATION_OUTCOMES, CANCELLATION_STATUSES, type CancellationOutcome, type CancellationStatus } from '../../contract/enums.ts';
import type { CancellationRepository } from './repository.ts';

export interface CancellationStats {
  byStatus: Record<CancellationStatus, number>;
  byOutcome: Record<CancellationOutcome, number>;
}

/** A store's cancellations counted by status and by outcome (its stats' `cancellations`), zeros included. */
export async function cancellationStats(repository: CancellationRepository, resellerStoreId: string): Promise<CancellationStats> {
  const counts = await repository.countsFor(resellerStoreId);
  return {
    byStatus: Object.fromEntries(CANCELLATION_STATUSES.map((status) => [status, counts.byStatus[status] ?? 0])) as CancellationStats['byStatus'],
    byOutcome: Object.fromEntries(CANCELLATION_OUTCOMES.map((outcome) => [outcome, counts.byOutcome[outcome] ?? 0])) as CancellationStats['byOutcome'],
  };
}
