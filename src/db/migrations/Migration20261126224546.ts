import { Migration } from '@mikro-orm/migrations';

/**
 * The sweep's rescue of stranded webhook deliveries reads pending deliveries by when they were last
 * due or moved, so those waiting for a later attempt (hours, behind an endpoint that is down) are
 * not read on every pass.
 */
export class Migration20261126224546 extends Migration {

  override name = 'Migration20261126224546';

  override up(): void | Promise<void> {
    this.addSql(`create index "webhook_deliveries_pending_due_index" on "webhook_deliveries" ((greatest("updated_at", "next_attempt_at"))) where "status" = 'pending';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "webhook_deliveries_pending_due_index";`);
  }

}
