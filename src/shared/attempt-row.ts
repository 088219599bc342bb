import type { AttemptContext, AttemptState, PersistedAttempt, PersistedSnapshot } from '../../machines/attempt.machine.ts';

/** The columns every queued, retried piece of work keeps (sync jobs, fulfillments). */
export interface AttemptRow {
  status: PersistedAttempt<string>['status'];
  attempts: number;
  errorMessage?: string | null;
  completedAt?: Date | null;
  failedAt?: Date | null;
  deadAt?: Date | null;
  machineState: PersistedSnapshot;
  updatedAt: Date;
}

/** Rebuilds the machine's view of a row from its persisted snapshot. */
export function persistedOf<K extends string>(row: Pick<AttemptRow, 'status' | 'machineState'>): PersistedAttempt<K> {
  const { context } = row.machineState as unknown as { context: AttemptContext<K> };
  return { status: row.status, context };
}

const toDate = (value: string | null) => (value ? new Date(value) : null);

/** Writes a machine state onto a row: the snapshot plus the columns the API shows and filters on. */
export function projectAttempt<K extends string>(
  row: Partial<AttemptRow & Record<K, string | null>>,
  state: AttemptState<K>,
  resultKey: K,
  at: Date,
): void {
  const { context } = state;
  Object.assign(row, {
    machineState: state.snapshot,
    status: state.status,
    attempts: context.attempts,
    errorMessage: context.errorMessage,
    completedAt: toDate(context.completedAt),
    failedAt: toDate(context.failedAt),
    deadAt: toDate(context.deadAt),
    updatedAt: at,
    [resultKey]: context[resultKey],
  });
}
