import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * How many sync jobs and fulfillments of a reseller store are in each status, kept by database
 * triggers on `sync_jobs` and `fulfillments` (see the migration that creates this table), so that
 * `GET /v1/reseller_stores/{id}/stats` reads a few dozen rows instead of counting a million.
 *
 * A count is split over slots (the writing connection's backend pid modulo SLOTS): transactions
 * on different connections add to different rows, so routing and workers never queue behind one
 * hot counter row. A store's count for a status is the sum over its slots; one slot may be negative.
 * `kind` and `status` are plain text: a status added later is counted without a schema change.
 */
export const StoreStatusCount = defineEntity({
  name: 'StoreStatusCount',
  tableName: 'store_status_counts',
  properties: {
    resellerStoreId: p.string().primary(),
    kind: p.string().length(32).primary(),
    status: p.string().length(32).primary(),
    slot: p.smallint().primary(),
    count: p.integer(),
  },
});
export type StoreStatusCount = InferEntity<typeof StoreStatusCount>;

export const STATUS_COUNT_SLOTS = 32;

/**
 * The statement-level triggers that keep `store_status_counts` for a table whose rows have
 * `reseller_store_id` and `status` (sync jobs, fulfillments): one upsert per statement, whatever
 * the number of rows it wrote, with the deltas grouped and in key order (two statements never lock
 * the same counter rows in opposite orders). Transition tables allow one event per trigger, hence three.
 * No `--` comments in the body: the schema tooling joins a function body onto one line.
 */
export function statusCountTriggers(table: 'sync_jobs' | 'fulfillments', kind: 'sync_job' | 'fulfillment') {
  const apply = `execute function store_status_counts_apply('${kind}')`;
  return [
    {
      name: `${table}_count_inserts`,
      timing: 'after' as const,
      events: ['insert' as const],
      forEach: 'statement' as const,
      expression: `${APPLY_FUNCTION};
create trigger ${table}_count_inserts after insert on ${table} referencing new table as new_rows for each statement ${apply}`,
    },
    {
      name: `${table}_count_updates`,
      timing: 'after' as const,
      events: ['update' as const],
      forEach: 'statement' as const,
      expression: `create trigger ${table}_count_updates after update on ${table} referencing old table as old_rows new table as new_rows for each statement ${apply}`,
    },
    {
      name: `${table}_count_deletes`,
      timing: 'after' as const,
      events: ['delete' as const],
      forEach: 'statement' as const,
      expression: `create trigger ${table}_count_deletes after delete on ${table} referencing old table as old_rows for each statement ${apply}`,
    },
  ];
}

const UPSERT = `insert into store_status_counts as c (reseller_store_id, kind, status, slot, count)`;
const ON_CONFLICT = `on conflict (reseller_store_id, kind, status, slot) do update set count = c.count + excluded.count`;
const SLOT = `pg_backend_pid() % ${STATUS_COUNT_SLOTS}`;

const APPLY_FUNCTION = `create or replace function store_status_counts_apply() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    ${UPSERT}
    select reseller_store_id, tg_argv[0], status, ${SLOT}, count(*) from new_rows
    group by reseller_store_id, status order by reseller_store_id, status
    ${ON_CONFLICT};
  elsif tg_op = 'UPDATE' then
    ${UPSERT}
    select reseller_store_id, tg_argv[0], status, ${SLOT}, sum(delta) from (
      select o.reseller_store_id, o.status, -1 as delta from old_rows o join new_rows n on n.id = o.id where n.status <> o.status
      union all
      select n.reseller_store_id, n.status, 1 as delta from old_rows o join new_rows n on n.id = o.id where n.status <> o.status
    ) as moved
    group by reseller_store_id, status having sum(delta) <> 0 order by reseller_store_id, status
    ${ON_CONFLICT};
  else
    ${UPSERT}
    select reseller_store_id, tg_argv[0], status, ${SLOT}, -count(*) from old_rows
    group by reseller_store_id, status order by reseller_store_id, status
    ${ON_CONFLICT};
  end if;
  return null;
end
$$`;
