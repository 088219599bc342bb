import { Migration } from '@mikro-orm/migrations';

/**
 * A held fulfillment remembers the divergence-watch pass that found it, so its claim is audited and
 * announced `fulfillment.reconciled` as the watch's own repairs are, not as a webhook's delivery.
 */
export class Migration20261127041858 extends Migration {

  override name = 'Migration20261127041858';

  override up(): void | Promise<void> {
    this.addSql(`alter table "held_fulfillments" add "watch_pass_id" varchar(255) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "held_fulfillments" drop column "watch_pass_id";`);
  }

}
