import { Migration } from '@mikro-orm/migrations';

/**
 * Held supplier cancellations (src/cancellations/held.entity.ts): a supplier's own cancellation of
 * an order no job has recorded yet, while a job of that supplier is in doubt (its create answer was
 * lost), kept until the job learns the order, as held fulfillments are. Before, it was dropped, and
 * only the divergence watch (when it runs) would find it.
 */
export class Migration20261127201000 extends Migration {

  override name = 'Migration20261127201000';

  override up(): void | Promise<void> {
    this.addSql(`create table "held_supplier_cancellations" ("id" varchar(255) not null, "owner_id" varchar(255) not null, "reseller_store_id" varchar(255) not null, "source_store_id" varchar(255) not null, "source_order_id" varchar(255) not null, "dedupe_key" varchar(200) not null, "reason" text null, "lines" jsonb null, "cancelled_at" timestamptz not null, "via" jsonb not null, "received_at" timestamptz not null, "claim_failed_at" timestamptz null, primary key ("id"));`);
    this.addSql(`alter table "held_supplier_cancellations" add constraint "held_supplier_cancellations_order_dedupe_unique" unique ("source_store_id", "source_order_id", "dedupe_key");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "held_supplier_cancellations" cascade;`);
  }

}
