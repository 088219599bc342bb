import { Migration } from '@mikro-orm/migrations';

export class Migration20261123161905 extends Migration {

  override name = 'Migration20261123161905';

  override up(): void | Promise<void> {
    this.addSql(`create table "events" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) null, "type" varchar(64) not null, "payload" text not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "events_owner_id_id_index" on "events" ("owner_id", "id");`);
    this.addSql(`create index "events_owner_id_type_id_index" on "events" ("owner_id", "type", "id");`);
    this.addSql(`create index "events_reseller_store_id_id_index" on "events" ("reseller_store_id", "id");`);

    this.addSql(`create table "webhook_deliveries" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "endpoint_id" varchar(255) not null, "event_id" varchar(255) not null, "event_type" varchar(64) not null, "status" text not null, "attempts" int not null, "schedule_attempts" int not null, "last_attempt_at" timestamptz null, "next_attempt_at" timestamptz null, "last_response_status" int null, "last_error" text null, "last_response_excerpt" text null, "duration_ms" int null, "sending_until" timestamptz null, "queue_message_id" varchar(255) null, "version" int not null default 1, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "webhook_deliveries_endpoint_id_id_index" on "webhook_deliveries" ("endpoint_id", "id");`);
    this.addSql(`create index "webhook_deliveries_event_id_index" on "webhook_deliveries" ("event_id");`);
    this.addSql(`create index "webhook_deliveries_status_created_at_index" on "webhook_deliveries" ("status", "created_at");`);
    this.addSql(`create index "webhook_deliveries_sending_index" on "webhook_deliveries" ("endpoint_id") where "sending_until" is not null;`);

    this.addSql(`create table "webhook_endpoints" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "url" text not null, "enabled_events" jsonb not null, "description" text null, "status" text not null, "disabled_reason" text null, "secret_encrypted" text not null, "previous_secret_encrypted" text null, "previous_secret_expires_at" timestamptz null, "failing_since" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "webhook_endpoints_owner_id_id_index" on "webhook_endpoints" ("owner_id", "id");`);

    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_status_check" check ("status" in ('pending', 'succeeded', 'failed'));`);

    this.addSql(`alter table "webhook_endpoints" add constraint "webhook_endpoints_status_check" check ("status" in ('enabled', 'disabled'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "events" cascade;`);
    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);
    this.addSql(`drop table if exists "webhook_endpoints" cascade;`);
  }

}
