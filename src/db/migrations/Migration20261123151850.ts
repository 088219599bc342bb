import { Migration } from '@mikro-orm/migrations';

export class Migration20261123151850 extends Migration {

  override name = 'Migration20261123151850';

  override up(): void | Promise<void> {
    this.addSql(`create table "reconciliation_runs" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "trigger" text not null, "status" text not null, "requested_since" timestamptz null, "since" timestamptz null, "orders_seen" int not null, "orders_routed" int not null, "error" text null, "takes" int not null, "lease_expires_at" timestamptz not null, "started_at" timestamptz not null, "finished_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "reconciliation_runs_reseller_store_id_id_index" on "reconciliation_runs" ("reseller_store_id", "id");`);
    this.addSql(`create index "reconciliation_runs_reseller_store_id_started_at_index" on "reconciliation_runs" ("reseller_store_id", "started_at");`);
    this.addSql(`create unique index "reconciliation_runs_one_running_per_store" on "reconciliation_runs" ("reseller_store_id") where status = 'running';`);

    this.addSql(`create table "reconciliation_watermarks" ("reseller_store_id" varchar(255) not null, "watermark" timestamptz not null, "reconciled_until" timestamptz not null, "updated_at" timestamptz not null, primary key ("reseller_store_id"));`);

    this.addSql(`create table "routed_orders" ("reseller_store_id" varchar(255) not null, "external_order_id" varchar(32) not null, "source" text not null, "routed_at" timestamptz not null, primary key ("reseller_store_id", "external_order_id"));`);

    this.addSql(`alter table "reconciliation_runs" add constraint "reconciliation_runs_trigger_check" check ("trigger" in ('scheduled', 'manual'));`);
    this.addSql(`alter table "reconciliation_runs" add constraint "reconciliation_runs_status_check" check ("status" in ('running', 'succeeded', 'failed'));`);

    this.addSql(`alter table "routed_orders" add constraint "routed_orders_source_check" check ("source" in ('webhook', 'reconciliation'));`);

    // Orders routed before this table existed: their webhook's jobs, or its unmatched-lines entry when no supplier matched.
    this.addSql(`insert into "routed_orders" ("reseller_store_id", "external_order_id", "source", "routed_at")
      select "reseller_store_id", "external_order_id", 'webhook', min("routed_at") from (
        select "reseller_store_id", "external_order_id", "created_at" as "routed_at" from "sync_jobs" where "origin" = 'webhook'
        union all
        select "reseller_store_id", "resource_id", "created_at" from "audit_entries"
        where "action" = 'order.lines_unmatched' and length("resource_id") <= 32
      ) as "routed" group by "reseller_store_id", "external_order_id";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "reconciliation_runs" cascade;`);
    this.addSql(`drop table if exists "reconciliation_watermarks" cascade;`);
    this.addSql(`drop table if exists "routed_orders" cascade;`);
  }

}
