import { Migration } from '@mikro-orm/migrations';

/**
 * A cancellation of some lines after which nothing of the supplier order is left open records it
 * (`closes_order`): that job is then never stale, and its stale entry is resolved, as for a
 * whole-order cancellation.
 */
export class Migration20261126225759 extends Migration {

  override name = 'Migration20261126225759';

  override up(): void | Promise<void> {
    this.addSql(`alter table "cancellations" add "closes_order" boolean not null default false;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "cancellations" drop column "closes_order";`);
  }

}
