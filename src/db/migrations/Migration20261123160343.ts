import { Migration } from '@mikro-orm/migrations';

export class Migration20261123160343 extends Migration {

  override name = 'Migration20261123160343';

  override up(): void | Promise<void> {
    this.addSql(`create table "attempts" ("row_id" varchar(255) not null, "attempt" int not null, "kind" text not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "trigger" text not null, "started_at" timestamptz not null, "finished_at" timestamptz null, "outcome" text not null, "error_message" text null, "platform_status" smallint null, "result" varchar(255) null, primary key ("row_id", "attempt"));`);

    this.addSql(`alter table "attempts" add constraint "attempts_kind_check" check ("kind" in ('sync_job', 'fulfillment'));`);
    this.addSql(`alter table "attempts" add constraint "attempts_trigger_check" check ("trigger" in ('initial', 'automatic_retry', 'manual_retry', 'recovered'));`);
    this.addSql(`alter table "attempts" add constraint "attempts_outcome_check" check ("outcome" in ('succeeded', 'failed', 'in_progress'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "attempts" cascade;`);
  }

}
