import type { AttemptEntry } from '../attempts/entity.ts';
import type { Trx } from '../db/sql.ts';

/**
 * The reseller's to-do list (order-changes.md, "The divergence watch"), as this feature writes to it:
 * an entry raised in the transaction of the change that causes it. The divergence list's repository
 * (src/divergence-watch/), handed in by the composition root (src/services.ts).
 */
export interface DivergenceRaising {
  raise(
    trx: Trx,
    entry: { ownerId: string; resellerStoreId: string; syncJobId: string; type: 'too_late' | 'supplier_cancelled'; subjectId?: string; detail: string | null },
  ): Promise<unknown>;
}

/** The timeline entries of rows, each row's oldest first: the retry framework's, handed in by the composition root. */
export interface AttemptTimelines {
  find(rowIds: string[]): Promise<AttemptEntry[]>;
}
