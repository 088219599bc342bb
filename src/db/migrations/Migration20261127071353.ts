import { Migration } from '@mikro-orm/migrations';

/**
 * The attempts' sweep reads unfinished rows by when they were last moved or, failed, when their
 * retry is due (`greatest(updated_at, next_retry_at)`), so rows waiting for a later retry are not
 * read on every pass, nor queued again before their retry.
 */
export class Migration20261127071353 extends Migration {

  override name = 'Migration20261127071353';

  override up(): void | Promise<void> {
    this.addSql(`drop index "cancellations_unfinished_index";`);
    this.addSql(`create index "cancellations_unfinished_due_index" on "cancellations" ((greatest("updated_at", "next_retry_at"))) where "status" in ('pending', 'processing', 'failed');`);

    this.addSql(`drop index "fulfillments_unfinished_index";`);
    this.addSql(`create index "fulfillments_unfinished_due_index" on "fulfillments" ((greatest("updated_at", "next_retry_at"))) where "status" in ('pending', 'processing', 'failed');`);

    this.addSql(`drop index "sync_jobs_unfinished_index";`);
    this.addSql(`create index "sync_jobs_unfinished_due_index" on "sync_jobs" ((greatest("updated_at", "next_retry_at"))) where "status" in ('pending', 'processing', 'failed');`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "cancellations_unfinished_due_index";`);
    this.addSql(`create index "cancellations_unfinished_index" on "cancellations" ("updated_at") where status = ANY (ARRAY['pending'::text, 'processing'::text, 'failed'::text]);`);

    this.addSql(`drop index "fulfillments_unfinished_due_index";`);
    this.addSql(`create index "fulfillments_unfinished_index" on "fulfillments" ("updated_at") where status = ANY (ARRAY['pending'::text, 'processing'::text, 'failed'::text]);`);

    this.addSql(`drop index "sync_jobs_unfinished_due_index";`);
    this.addSql(`create index "sync_jobs_unfinished_index" on "sync_jobs" ("updated_at") where status = ANY (ARRAY['pending'::text, 'processing'::text, 'failed'::text]);`);
  }

}
