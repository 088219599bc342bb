import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 26: each attempt keeps a redacted, bounded excerpt of its last platform call (`request`,
 * `response`); sync jobs, fulfillments and cancellations keep when a failed row's automatic retry
 * is due (`next_retry_at`, the start of the queue message scheduled with the failure). Rows that
 * failed before this migration show no time until their retry runs.
 */
export class Migration20261125211704 extends Migration {

  override name = 'Migration20261125211704';

  override up(): void | Promise<void> {
    this.addSql(`alter table "attempts" add "request" jsonb null, add "response" jsonb null;`);

    this.addSql(`alter table "cancellations" add "next_retry_at" timestamptz null;`);

    this.addSql(`alter table "fulfillments" add "next_retry_at" timestamptz null;`);

    this.addSql(`alter table "sync_jobs" add "next_retry_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "attempts" drop column "request", drop column "response";`);

    this.addSql(`alter table "cancellations" drop column "next_retry_at";`);

    this.addSql(`alter table "fulfillments" drop column "next_retry_at";`);

    this.addSql(`alter table "sync_jobs" drop column "next_retry_at";`);
  }

}
