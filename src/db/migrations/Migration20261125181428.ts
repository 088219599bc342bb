import { Migration } from '@mikro-orm/migrations';

export class Migration20261125181428 extends Migration {

  override name = 'Migration20261125181428';

  override up(): void | Promise<void> {
    this.addSql(`create table "cancellations" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "sync_job_id" varchar(255) not null, "signal_id" varchar(255) not null, "scope" text not null, "lines" jsonb not null, "status" text not null, "attempts" int not null, "retries_left" int not null, "outcome" text null, "reason" text null, "error_message" text null, "completed_at" timestamptz null, "failed_at" timestamptz null, "dead_at" timestamptz null, "queue_message_id" varchar(255) null, "version" int not null default 1, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "cancellations_sync_job_id_index" on "cancellations" ("sync_job_id");`);
    this.addSql(`create index "cancellations_reseller_store_id_index" on "cancellations" ("reseller_store_id");`);
    this.addSql(`create index "cancellations_unfinished_index" on "cancellations" ("updated_at") where status in ('pending', 'processing', 'failed');`);
    this.addSql(`alter table "cancellations" add constraint "cancellations_signal_job_unique" unique ("signal_id", "sync_job_id");`);

    this.addSql(`create table "order_cancellations" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "external_order_id" varchar(32) not null, "scope" text not null, "lines" jsonb not null, "dedupe_key" varchar(255) not null, "received_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "order_cancellations_reseller_store_id_external_order_id_index" on "order_cancellations" ("reseller_store_id", "external_order_id");`);
    this.addSql(`alter table "order_cancellations" add constraint "order_cancellations_store_dedupe_unique" unique ("reseller_store_id", "dedupe_key");`);

    this.addSql(`alter table "sync_jobs" add "supplier_cancelled_at" timestamptz null, add "supplier_cancel_reason" text null;`);

    this.addSql(`alter table "cancellations" add constraint "cancellations_scope_check" check ("scope" in ('order', 'lines'));`);
    this.addSql(`alter table "cancellations" add constraint "cancellations_status_check" check ("status" in ('pending', 'processing', 'completed', 'failed', 'dead'));`);
    this.addSql(`alter table "cancellations" add constraint "cancellations_outcome_check" check ("outcome" in ('cancelled', 'not_placed', 'too_late', 'unsupported'));`);

    this.addSql(`alter table "order_cancellations" add constraint "order_cancellations_scope_check" check ("scope" in ('order', 'lines'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "cancellations" cascade;`);
    this.addSql(`drop table if exists "order_cancellations" cascade;`);


    this.addSql(`alter table "sync_jobs" drop column "supplier_cancelled_at", drop column "supplier_cancel_reason";`);
  }

}
