import { Migration } from '@mikro-orm/migrations';

/**
 * The lifecycle state is stored once, in columns: the machine's snapshot (`machine_state`) only
 * repeated them, plus `retriesLeft`, which becomes a column of its own. Existing rows keep theirs.
 */
export class Migration20261123151426 extends Migration {

  override name = 'Migration20261123151426';

  override up(): void | Promise<void> {
    for (const table of ['sync_jobs', 'fulfillments']) {
      this.addSql(`alter table "${table}" add "retries_left" int null;`);
      this.addSql(`update "${table}" set "retries_left" = coalesce(("machine_state"->'context'->>'retriesLeft')::int, 3);`);
      this.addSql(`alter table "${table}" alter column "retries_left" set not null;`);
      this.addSql(`alter table "${table}" drop column "machine_state";`);
    }
  }

  override down(): void | Promise<void> {
    for (const [table, resultKey, resultColumn] of [
      ['sync_jobs', 'sourceOrderId', 'source_order_id'],
      ['fulfillments', 'resellerFulfillmentId', 'reseller_fulfillment_id'],
    ] as const) {
      this.addSql(`alter table "${table}" add "machine_state" jsonb null;`);
      this.addSql(`update "${table}" set "machine_state" = jsonb_build_object('status', 'active', 'value', "status", 'historyValue', '{}'::jsonb, 'children', '{}'::jsonb,
        'context', jsonb_build_object('attempts', "attempts", 'retriesLeft', "retries_left", 'errorMessage', "error_message",
          'completedAt', to_jsonb("completed_at"), 'failedAt', to_jsonb("failed_at"), 'deadAt', to_jsonb("dead_at"), '${resultKey}', "${resultColumn}"));`);
      this.addSql(`alter table "${table}" alter column "machine_state" set not null;`);
      this.addSql(`alter table "${table}" drop column "retries_left";`);
    }
  }

}
