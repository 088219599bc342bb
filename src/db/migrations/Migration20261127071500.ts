import { Migration } from '@mikro-orm/migrations';

/**
 * The waiting line of a store's ordinary work beyond the booking horizon (src/pacing/repository.ts):
 * `queued_until`, a second GCRA time, is where the line ends. The table stays UNLOGGED.
 */
export class Migration20261127071500 extends Migration {

  override name = 'Migration20261127071500';

  override up(): void | Promise<void> {
    this.addSql(`alter table "store_pacing" add "queued_until" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "store_pacing" drop column "queued_until";`);
  }

}
