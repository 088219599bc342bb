import { Migration } from '@mikro-orm/migrations';

export class Migration20261123155842 extends Migration {

  override name = 'Migration20261123155842';

  override up(): void | Promise<void> {
    this.addSql(`create table "store_status_counts" ("reseller_store_id" varchar(255) not null, "kind" varchar(32) not null, "status" varchar(32) not null, "slot" smallint not null, "count" int not null, primary key ("reseller_store_id", "kind", "status", "slot"));`);

    this.addSql(`create or replace function store_status_counts_apply() returns trigger language plpgsql as \$\$begin
  if tg_op = 'INSERT' then
    insert into store_status_counts as c (reseller_store_id, kind, status, slot, count)
    select reseller_store_id, tg_argv[0], status, pg_backend_pid() % 32, count(*) from new_rows
    group by reseller_store_id, status order by reseller_store_id, status
    on conflict (reseller_store_id, kind, status, slot) do update set count = c.count + excluded.count;   elsif tg_op = 'UPDATE' then
    insert into store_status_counts as c (reseller_store_id, kind, status, slot, count)
    select reseller_store_id, tg_argv[0], status, pg_backend_pid() % 32, sum(delta) from (
      select o.reseller_store_id, o.status, -1 as delta from old_rows o join new_rows n on n.id = o.id where n.status <> o.status
      union all
      select n.reseller_store_id, n.status, 1 as delta from old_rows o join new_rows n on n.id = o.id where n.status <> o.status
    ) as moved
    group by reseller_store_id, status having sum(delta) <> 0 order by reseller_store_id, status
    on conflict (reseller_store_id, kind, status, slot) do update set count = c.count + excluded.count;   else
    insert into store_status_counts as c (reseller_store_id, kind, status, slot, count)
    select reseller_store_id, tg_argv[0], status, pg_backend_pid() % 32, -count(*) from old_rows
    group by reseller_store_id, status order by reseller_store_id, status
    on conflict (reseller_store_id, kind, status, slot) do update set count = c.count + excluded.count;   end if;   return null; end\$\$;`);
    this.addSql(`create trigger fulfillments_count_inserts after insert on fulfillments referencing new table as new_rows for each statement execute function store_status_counts_apply('fulfillment');`);
    this.addSql(`create trigger fulfillments_count_updates after update on fulfillments referencing old table as old_rows new table as new_rows for each statement execute function store_status_counts_apply('fulfillment');`);
    this.addSql(`create trigger fulfillments_count_deletes after delete on fulfillments referencing old table as old_rows for each statement execute function store_status_counts_apply('fulfillment');`);

    this.addSql(`create index "sync_jobs_reseller_store_id_id_index" on "sync_jobs" ("reseller_store_id", "id");`);
    this.addSql(`create index "sync_jobs_pending_since_index" on "sync_jobs" ("reseller_store_id", "updated_at") where status = 'pending';`);
    this.addSql(`create or replace function store_status_counts_apply() returns trigger language plpgsql as \$\$begin
  if tg_op = 'INSERT' then
    insert into store_status_counts as c (reseller_store_id, kind, status, slot, count)
    select reseller_store_id, tg_argv[0], status, pg_backend_pid() % 32, count(*) from new_rows
    group by reseller_store_id, status order by reseller_store_id, status
    on conflict (reseller_store_id, kind, status, slot) do update set count = c.count + excluded.count;   elsif tg_op = 'UPDATE' then
    insert into store_status_counts as c (reseller_store_id, kind, status, slot, count)
    select reseller_store_id, tg_argv[0], status, pg_backend_pid() % 32, sum(delta) from (
      select o.reseller_store_id, o.status, -1 as delta from old_rows o join new_rows n on n.id = o.id where n.status <> o.status
      union all
      select n.reseller_store_id, n.status, 1 as delta from old_rows o join new_rows n on n.id = o.id where n.status <> o.status
    ) as moved
    group by reseller_store_id, status having sum(delta) <> 0 order by reseller_store_id, status
    on conflict (reseller_store_id, kind, status, slot) do update set count = c.count + excluded.count;   else
    insert into store_status_counts as c (reseller_store_id, kind, status, slot, count)
    select reseller_store_id, tg_argv[0], status, pg_backend_pid() % 32, -count(*) from old_rows
    group by reseller_store_id, status order by reseller_store_id, status
    on conflict (reseller_store_id, kind, status, slot) do update set count = c.count + excluded.count;   end if;   return null; end\$\$;`);
    this.addSql(`create trigger sync_jobs_count_inserts after insert on sync_jobs referencing new table as new_rows for each statement execute function store_status_counts_apply('sync_job');`);
    this.addSql(`create trigger sync_jobs_count_updates after update on sync_jobs referencing old table as old_rows new table as new_rows for each statement execute function store_status_counts_apply('sync_job');`);
    this.addSql(`create trigger sync_jobs_count_deletes after delete on sync_jobs referencing old table as old_rows for each statement execute function store_status_counts_apply('sync_job');`);

    // Counts of the rows that exist already; the triggers above keep them from here on (creating a
    // trigger locks the table against writes until this migration commits, so none is missed).
    this.addSql(`insert into store_status_counts (reseller_store_id, kind, status, slot, count)
      select reseller_store_id, 'sync_job', status, 0, count(*) from sync_jobs group by reseller_store_id, status
      union all
      select reseller_store_id, 'fulfillment', status, 0, count(*) from fulfillments group by reseller_store_id, status;`);
  }

  override down(): void | Promise<void> {
    for (const table of ['sync_jobs', 'fulfillments']) {
      for (const event of ['inserts', 'updates', 'deletes']) this.addSql(`drop trigger if exists "${table}_count_${event}" on "${table}";`);
    }
    this.addSql(`drop function if exists store_status_counts_apply();`);
    this.addSql(`drop table if exists "store_status_counts";`);
    this.addSql(`drop index "sync_jobs_reseller_store_id_id_index";`);
    this.addSql(`drop index "sync_jobs_pending_since_index";`);
  }

}
