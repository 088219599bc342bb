import { Migration } from '@mikro-orm/migrations';

/**
 * A sync job keeps its supplier order's lines with the supplier's own line ids, from the create
 * answer (issue 23: a cancellation of some lines names them). Null for jobs placed before.
 */
export class Migration20261125211508 extends Migration {

  override name = 'Migration20261125211508';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sync_jobs" add "supplier_lines" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sync_jobs" drop column "supplier_lines";`);
  }

}
