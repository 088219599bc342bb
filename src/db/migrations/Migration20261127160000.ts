import { Migration } from '@mikro-orm/migrations';

/**
 * The lines a supplier's own cancellation named (`supplier_cancelled_lines`: a custom supplier's
 * cancellation of some lines), so that its later cancellation of the rest of the order, or of the
 * whole, is recorded too rather than taken for the one recorded already. Null for a whole-order one,
 * and for the jobs recorded before (whole or not, they stay as they were recorded).
 */
export class Migration20261127160000 extends Migration {

  override name = 'Migration20261127160000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sync_jobs" add "supplier_cancelled_lines" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sync_jobs" drop column "supplier_cancelled_lines";`);
  }

}
