import { Migration } from '@mikro-orm/migrations';

/**
 * When a storefront cancellation was made, as its platform says (`occurred_at`): a lines signal made
 * no later than the storefront order that routing read (the `listed:` signal routing records for the
 * lines that order shows cancelled) is among those lines, and is not applied a second time.
 */
export class Migration20261127060000 extends Migration {

  override name = 'Migration20261127060000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "order_cancellations" add "occurred_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "order_cancellations" drop column "occurred_at";`);
  }

}
