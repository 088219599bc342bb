import { Migration } from '@mikro-orm/migrations';

export class Migration20261122051837 extends Migration {

  override name = 'Migration20261122051837';

  override up(): void | Promise<void> {
    this.addSql(`create table "api_keys" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "environment" text not null, "prefix" varchar(16) not null, "name" varchar(200) not null, "key_hash" varchar(64) not null, "last_used_at" timestamptz null, "created_at" timestamptz not null, "revoked_at" timestamptz null, primary key ("id"));`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_key_hash_unique" unique ("key_hash");`);
    this.addSql(`create index "api_keys_owner_id_id_index" on "api_keys" ("owner_id", "id");`);

    this.addSql(`create table "audit_entries" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "action" varchar(64) not null, "resource_type" varchar(64) not null, "resource_id" varchar(255) not null, "metadata" jsonb not null, "actor_id" varchar(255) not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "audit_entries_owner_id_id_index" on "audit_entries" ("owner_id", "id");`);
    this.addSql(`create index "audit_entries_reseller_store_id_id_index" on "audit_entries" ("reseller_store_id", "id");`);
    this.addSql(`create index "audit_entries_resource_id_index" on "audit_entries" ("resource_id");`);

    this.addSql(`create table "fulfillments" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "sync_job_id" varchar(255) not null, "dedupe_key" varchar(200) not null, "status" text not null, "attempts" int not null, "tracking" jsonb not null, "reseller_fulfillment_id" varchar(255) null, "error_message" text null, "completed_at" timestamptz null, "failed_at" timestamptz null, "dead_at" timestamptz null, "machine_state" jsonb not null, "queue_message_id" varchar(255) null, "version" int not null default 1, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "fulfillments" add constraint "fulfillments_job_dedupe_unique" unique ("sync_job_id", "dedupe_key");`);

    this.addSql(`create table "refresh_tokens" ("id" varchar(255) not null, "user_id" varchar(255) not null, "family_id" varchar(255) not null, "token_hash" varchar(64) not null, "expires_at" timestamptz not null, "rotated_at" timestamptz null, "revoked_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "refresh_tokens_user_id_index" on "refresh_tokens" ("user_id");`);
    this.addSql(`create index "refresh_tokens_family_id_index" on "refresh_tokens" ("family_id");`);
    this.addSql(`alter table "refresh_tokens" add constraint "refresh_tokens_token_hash_unique" unique ("token_hash");`);

    this.addSql(`create table "reseller_stores" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "name" varchar(200) not null, "platform" text not null, "shop_domain" varchar(255) not null, "access_token_encrypted" text not null, "webhook_secret_encrypted" text not null, "created_at" timestamptz not null, "deleted_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "reseller_stores_owner_id_id_index" on "reseller_stores" ("owner_id", "id");`);
    this.addSql(`create unique index "reseller_stores_active_shop_domain_unique" on "reseller_stores" ("shop_domain") where deleted_at is null;`);

    this.addSql(`create table "source_stores" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "name" varchar(200) not null, "platform" text not null, "shop_domain" varchar(255) not null, "vendor_tag" varchar(200) not null, "vendor_key" varchar(200) not null, "pricing_mode" text not null, "pricing_config" jsonb not null, "access_token_encrypted" text not null, "webhook_secret_encrypted" text not null, "created_at" timestamptz not null, "deleted_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "source_stores_shop_domain_index" on "source_stores" ("shop_domain");`);
    this.addSql(`create index "source_stores_reseller_store_id_id_index" on "source_stores" ("reseller_store_id", "id");`);
    this.addSql(`create unique index "source_stores_active_vendor_key_unique" on "source_stores" ("reseller_store_id", "vendor_key") where deleted_at is null;`);

    this.addSql(`create table "sync_jobs" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "source_store_id" varchar(255) not null, "external_order_id" varchar(32) not null, "origin" text not null, "status" text not null, "attempts" int not null, "source_order_id" varchar(255) null, "error_message" text null, "completed_at" timestamptz null, "failed_at" timestamptz null, "dead_at" timestamptz null, "machine_state" jsonb not null, "order" jsonb null, "queue_message_id" varchar(255) null, "version" int not null default 1, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "sync_jobs_owner_id_id_index" on "sync_jobs" ("owner_id", "id");`);
    this.addSql(`create index "sync_jobs_owner_id_status_id_index" on "sync_jobs" ("owner_id", "status", "id");`);
    this.addSql(`create index "sync_jobs_source_store_id_source_order_id_index" on "sync_jobs" ("source_store_id", "source_order_id");`);
    this.addSql(`alter table "sync_jobs" add constraint "sync_jobs_order_source_store_unique" unique ("external_order_id", "source_store_id");`);

    this.addSql(`create table "users" ("id" varchar(255) not null, "email" varchar(320) not null, "password_hash" text not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "users" add constraint "users_email_unique" unique ("email");`);

    this.addSql(`alter table "api_keys" add constraint "api_keys_environment_check" check ("environment" in ('live', 'test'));`);

    this.addSql(`alter table "fulfillments" add constraint "fulfillments_status_check" check ("status" in ('pending', 'processing', 'completed', 'failed', 'dead'));`);

    this.addSql(`alter table "reseller_stores" add constraint "reseller_stores_platform_check" check ("platform" in ('platform_a', 'platform_b', 'custom'));`);

    this.addSql(`alter table "source_stores" add constraint "source_stores_platform_check" check ("platform" in ('platform_a', 'platform_b', 'custom'));`);
    this.addSql(`alter table "source_stores" add constraint "source_stores_pricing_mode_check" check ("pricing_mode" in ('percentage', 'field_rules'));`);

    this.addSql(`alter table "sync_jobs" add constraint "sync_jobs_origin_check" check ("origin" in ('webhook', 'manual'));`);
    this.addSql(`alter table "sync_jobs" add constraint "sync_jobs_status_check" check ("status" in ('pending', 'processing', 'completed', 'failed', 'dead'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "api_keys" cascade;`);
    this.addSql(`drop table if exists "audit_entries" cascade;`);
    this.addSql(`drop table if exists "fulfillments" cascade;`);
    this.addSql(`drop table if exists "refresh_tokens" cascade;`);
    this.addSql(`drop table if exists "reseller_stores" cascade;`);
    this.addSql(`drop table if exists "source_stores" cascade;`);
    this.addSql(`drop table if exists "sync_jobs" cascade;`);
    this.addSql(`drop table if exists "users" cascade;`);
  }

}
