import { Migration } from '@mikro-orm/migrations';

/**
 * Reliability: the `skipped` status; a fulfillment's webhook id kept for de-duplication beside its
 * identity; fulfillments held until the job that owns their order completes; and partial indexes on
 * unfinished rows for the sweep.
 */
export class Migration20261123170718 extends Migration {

  override name = 'Migration20261123170718';

  override up(): void | Promise<void> {
    this.addSql(`create table "held_fulfillments" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "source_store_id" varchar(255) not null, "source_order_id" varchar(255) not null, "dedupe_key" varchar(200) not null, "webhook_id" varchar(200) null, "tracking" jsonb not null, "received_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "held_fulfillments" add constraint "held_fulfillments_order_dedupe_unique" unique ("source_store_id", "source_order_id", "dedupe_key");`);

    this.addSql(`alter table "fulfillments" drop constraint "fulfillments_status_check";`);
    this.addSql(`alter table "fulfillments" add "webhook_id" varchar(200) null;`);
    this.addSql(`create index "fulfillments_unfinished_index" on "fulfillments" ("updated_at") where status in ('pending', 'processing', 'failed');`);
    this.addSql(`alter table "fulfillments" add constraint "fulfillments_job_webhook_unique" unique ("sync_job_id", "webhook_id");`);
    this.addSql(`alter table "fulfillments" add constraint "fulfillments_status_check" check ("status" in ('pending', 'processing', 'completed', 'failed', 'dead', 'skipped'));`);

    this.addSql(`alter table "sync_jobs" drop constraint "sync_jobs_status_check";`);
    this.addSql(`create index "sync_jobs_unfinished_index" on "sync_jobs" ("updated_at") where status in ('pending', 'processing', 'failed');`);
    this.addSql(`alter table "sync_jobs" add constraint "sync_jobs_status_check" check ("status" in ('pending', 'processing', 'completed', 'failed', 'dead', 'skipped'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "held_fulfillments" cascade;`);

    this.addSql(`drop index "fulfillments_unfinished_index";`);
    this.addSql(`alter table "fulfillments" drop constraint "fulfillments_job_webhook_unique";`);
    this.addSql(`alter table "fulfillments" drop constraint "fulfillments_status_check";`);
    this.addSql(`alter table "fulfillments" drop column "webhook_id";`);
    this.addSql(`alter table "fulfillments" add constraint "fulfillments_status_check" check ("status" in ('pending', 'processing', 'completed', 'failed', 'dead'));`);

    this.addSql(`drop index "sync_jobs_unfinished_index";`);
    this.addSql(`alter table "sync_jobs" drop constraint "sync_jobs_status_check";`);
    this.addSql(`alter table "sync_jobs" add constraint "sync_jobs_status_check" check ("status" in ('pending', 'processing', 'completed', 'failed', 'dead'));`);
  }

}
