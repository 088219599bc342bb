import { Migration } from '@mikro-orm/migrations';

/**
 * A timeline entry's `kind` is any kind of retried work's name (src/workers/kinds.ts): the list no
 * longer lives in the core's table, so adding a kind changes no core table.
 */
export class Migration20261125183427 extends Migration {

  override name = 'Migration20261125183427';

  override up(): void | Promise<void> {
    this.addSql(`alter table "attempts" drop constraint "attempts_kind_check";`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "attempts" add constraint "attempts_kind_check" check ("kind" in ('sync_job', 'fulfillment'));`);
  }

}
