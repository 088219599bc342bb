import { Migration } from '@mikro-orm/migrations';

/**
 * The divergence watch: the reseller's to-do list (divergences), the watch's passes (one running per
 * store) and its per-store watermarks.
 */
export class Migration20261125181538 extends Migration {

  override name = 'Migration20261125181538';

  override up(): void | Promise<void> {
    this.addSql(`create table "divergences" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "sync_job_id" varchar(255) not null, "type" text not null, "status" text not null, "subject_id" varchar(255) not null, "detail" text null, "since" timestamptz not null, "resolved_at" timestamptz null, "dismissed_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "divergences_store_open_index" on "divergences" ("reseller_store_id", "id") where status = 'open';`);
    this.addSql(`create index "divergences_open_subject_index" on "divergences" ("subject_id") where status = 'open';`);
    this.addSql(`create unique index "divergences_job_type_unique" on "divergences" ("sync_job_id", "type") where status in ('open', 'dismissed');`);

    this.addSql(`create table "watch_passes" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "trigger" text not null, "status" text not null, "orders_seen" int not null, "repairs" int not null, "platform_reads" int not null, "error" text null, "takes" int not null, "lease_expires_at" timestamptz not null, "started_at" timestamptz not null, "finished_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "watch_passes_reseller_store_id_started_at_index" on "watch_passes" ("reseller_store_id", "started_at");`);
    this.addSql(`create unique index "watch_passes_one_running_per_store" on "watch_passes" ("reseller_store_id") where status = 'running';`);

    this.addSql(`create table "watch_watermarks" ("store_id" varchar(255) not null, "watermark" timestamptz not null, "updated_at" timestamptz not null, primary key ("store_id"));`);

    this.addSql(`alter table "divergences" add constraint "divergences_type_check" check ("type" in ('too_late', 'unsupported', 'supplier_cancelled', 'stale', 'cancellation_dead', 'job_dead', 'fulfillment_dead'));`);
    this.addSql(`alter table "divergences" add constraint "divergences_status_check" check ("status" in ('open', 'resolved', 'dismissed'));`);

    this.addSql(`alter table "watch_passes" add constraint "watch_passes_trigger_check" check ("trigger" in ('scheduled', 'manual'));`);
    this.addSql(`alter table "watch_passes" add constraint "watch_passes_status_check" check ("status" in ('running', 'succeeded', 'failed'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "divergences" cascade;`);
    this.addSql(`drop table if exists "watch_passes" cascade;`);
    this.addSql(`drop table if exists "watch_watermarks" cascade;`);
  }

}
