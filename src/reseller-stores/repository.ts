import { sql } from 'kysely';
import type { Db } from '../db/sql.ts';
import { FULFILLMENT_STATUSES, SYNC_JOB_STATUSES } from '../../contract/enums.ts';

export type StatusCounts<S extends string> = Record<S, number>;

/** A reseller store at a glance (GET /v1/reseller_stores/{id}/stats). */
export interface StoreStats {
  syncJobs: StatusCounts<(typeof SYNC_JOB_STATUSES)[number]>;
  fulfillments: StatusCounts<(typeof FULFILLMENT_STATUSES)[number]>;
  /** How long the longest-waiting pending job has been pending; null when none is. */
  oldestPendingSeconds: number | null;
  /** When the store's newest sync job was created: the last order routed. */
  lastOrderAt: Date | null;
  lastReconciledAt: Date | null;
}

/**
 * When the store's last successful reconciliation (src/reconciliation/) finished: the newest
 * succeeded run by start, read backwards on the runs' (reseller_store_id, started_at) index.
 */
const LAST_RECONCILED_AT = sql<string | null>`(
  select finished_at from reconciliation_runs
  where reseller_store_id = s.id and status = 'succeeded'
  order by started_at desc limit 1)`;

interface StatsRow {
  counts: { kind: string; status: string; count: number }[] | null;
  oldest_pending_seconds: number | null;
  /** Timestamps come back as text: the ORM's connection leaves values unparsed. */
  last_order_at: string | null;
  last_reconciled_at: string | null;
}

const dateOrNull = (value: string | null): Date | null => (value === null ? null : new Date(value));

/**
 * One statement, whatever the number of jobs: the counts come from `store_status_counts` (kept by
 * triggers, a few dozen rows per store), the oldest pending job from a partial index of pending
 * jobs, the newest job from the (reseller_store_id, id) index, the last reconciliation from the
 * runs' index. Ages are measured on the database's clock.
 */
export async function readStoreStats(db: Db, resellerStoreId: string): Promise<StoreStats> {
  const { rows } = await sql<StatsRow>`
    select
      (select jsonb_agg(jsonb_build_object('kind', kind, 'status', status, 'count', total))
         from (select kind, status, sum(count)::int as total from store_status_counts
               where reseller_store_id = s.id group by kind, status) as c) as counts,
      (select floor(extract(epoch from now() - min(updated_at)))::int from sync_jobs
         where reseller_store_id = s.id and status = 'pending') as oldest_pending_seconds,
      (select created_at from sync_jobs where reseller_store_id = s.id order by id desc limit 1) as last_order_at,
      ${LAST_RECONCILED_AT} as last_reconciled_at
    from (select ${resellerStoreId}::text as id) as s
  `.execute(db);
  const row = rows[0]!;
  const countsOf = <S extends string>(kind: string, statuses: readonly S[]): StatusCounts<S> => {
    const counts = Object.fromEntries(statuses.map((status) => [status, 0])) as StatusCounts<S>;
    for (const entry of row.counts ?? []) {
      if (entry.kind === kind && entry.status in counts) counts[entry.status as S] = entry.count;
    }
    return counts;
  };
  return {
    syncJobs: countsOf('sync_job', SYNC_JOB_STATUSES),
    fulfillments: countsOf('fulfillment', FULFILLMENT_STATUSES),
    // A clock step can make a fresh job look younger than now.
    oldestPendingSeconds: row.oldest_pending_seconds === null ? null : Math.max(0, row.oldest_pending_seconds),
    lastOrderAt: dateOrNull(row.last_order_at),
    lastReconciledAt: dateOrNull(row.last_reconciled_at),
  };
}
