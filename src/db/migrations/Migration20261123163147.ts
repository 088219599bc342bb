import { Migration } from '@mikro-orm/migrations';

/**
 * Flow control shared by every process: per-store call pacing (`store_pacing`), request counters
 * (`rate_limit_counters`), a version per supplier domain kept by a trigger on source_stores
 * (`source_store_domains`), so the fulfillment webhook tells in one indexed read whether its cached
 * secrets of a domain are current, and when each source store's secret first verified a delivery
 * (`webhook_proven_at`).
 *
 * The two flow-control tables are UNLOGGED (edited in by hand: MikroORM does not model it): they
 * hold only short-lived timing, written on every platform call and counted request, and writes to
 * an unlogged table skip the WAL, so a transaction touching only them commits without a flush. A
 * crash empties them, which costs one burst of calls per store and resets the current windows.
 */
export class Migration20261123163147 extends Migration {

  override name = 'Migration20261123163147';

  override up(): void | Promise<void> {
    this.addSql(`create unlogged table "rate_limit_counters" ("key" varchar(300) not null, "hits" int not null, "resets_at" timestamptz not null, primary key ("key"));`);
    this.addSql(`create index "rate_limit_counters_resets_at_index" on "rate_limit_counters" ("resets_at");`);

    this.addSql(`create table "source_store_domains" ("shop_domain" varchar(255) not null, "version" int not null, primary key ("shop_domain"));`);
    this.addSql(`insert into "source_store_domains" ("shop_domain", "version") select distinct "shop_domain", 1 from "source_stores";`);

    this.addSql(`create unlogged table "store_pacing" ("store_id" varchar(64) not null, "next_at" timestamptz not null, "paused_until" timestamptz null, primary key ("store_id"));`);

    this.addSql(`alter table "source_stores" add "webhook_proven_at" timestamptz null;`);
    this.addSql(`create or replace function "source_stores_bump_domain_version_fn"() returns trigger as \$\$ begin if tg_op <> 'INSERT' then
          insert into source_store_domains as d (shop_domain, version) values (old.shop_domain, 1)
            on conflict (shop_domain) do update set version = d.version + 1;         end if;         if tg_op = 'INSERT' or (tg_op = 'UPDATE' and new.shop_domain is distinct from old.shop_domain) then
          insert into source_store_domains as d (shop_domain, version) values (new.shop_domain, 1)
            on conflict (shop_domain) do update set version = d.version + 1;         end if;         return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "bump_domain_version" AFTER INSERT OR UPDATE OR DELETE on "source_stores" for each ROW execute function "source_stores_bump_domain_version_fn"();`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "rate_limit_counters" cascade;`);
    this.addSql(`drop table if exists "source_store_domains" cascade;`);
    this.addSql(`drop table if exists "store_pacing" cascade;`);

    this.addSql(`drop trigger if exists "bump_domain_version" on "source_stores";`);
    this.addSql(`drop function if exists "source_stores_bump_domain_version_fn"();`);
    this.addSql(`alter table "source_stores" drop column "webhook_proven_at";`);
  }

}
