import { Migration } from '@mikro-orm/migrations';

/**
 * A manual job keeps the orders its attempts sent to the supplier (`sent_orders`, each written before
 * its create call): a retry that gets back an earlier attempt's order (Idempotency-Key replay, lookup
 * by reference) records the one the supplier holds, so cancellations are planned against it rather
 * than against the retry's own read. Null for jobs that sent nothing yet, and for webhook jobs.
 */
export class Migration20261127130500 extends Migration {

  override name = 'Migration20261127130500';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sync_jobs" add "sent_orders" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sync_jobs" drop column "sent_orders";`);
  }

}
