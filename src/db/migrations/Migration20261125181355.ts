import { Migration } from '@mikro-orm/migrations';

/** A sync job's status is exactly interface.md's five: `skipped` is a fulfillment's alone (no sync job was ever skipped). */
export class Migration20261125181355 extends Migration {

  override name = 'Migration20261125181355';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sync_jobs" drop constraint "sync_jobs_status_check";`);
    this.addSql(`alter table "sync_jobs" add constraint "sync_jobs_status_check" check ("status" in ('pending', 'processing', 'completed', 'failed', 'dead'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sync_jobs" drop constraint "sync_jobs_status_check";`);
    this.addSql(`alter table "sync_jobs" add constraint "sync_jobs_status_check" check ("status" in ('pending', 'processing', 'completed', 'failed', 'dead', 'skipped'));`);
  }

}
