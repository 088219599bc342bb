import { Migration } from '@mikro-orm/migrations';

export class Migration20261122062836 extends Migration {

  override name = 'Migration20261122062836';

  override up(): void | Promise<void> {
    this.addSql(`create index "audit_entries_owner_id_action_id_index" on "audit_entries" ("owner_id", "action", "id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "audit_entries_owner_id_action_id_index";`);
  }

}
