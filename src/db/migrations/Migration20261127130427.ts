import { Migration } from '@mikro-orm/migrations';

/**
 * A held fulfillment remembers when the sweep last failed to read its supplier order (a supplier
 * that does not answer for now): read and kept, it goes behind those not read since, so the held
 * fulfillments of a supplier that never answers cannot take every pass of the sweep for 7 days.
 */
export class Migration20261127130427 extends Migration {

  override name = 'Migration20261127130427';

  override up(): void | Promise<void> {
    this.addSql(`alter table "held_fulfillments" add "read_failed_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "held_fulfillments" drop column "read_failed_at";`);
  }

}
