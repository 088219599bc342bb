import { Migration } from '@mikro-orm/migrations';

/**
 * When a delivery to the endpoint last failed (`last_failed_at`): a failure after a quiet spell
 * longer than the delivery schedule's span starts a new run of failures, so an endpoint that failed
 * on day 0 and got no event for a week is not disabled by one failure on day 6 (events.md: disabled
 * when its deliveries have ALL been failing for 5 days). Endpoints failing now get the last attempt
 * of their deliveries that did not succeed, or else the start of their run.
 */
export class Migration20261127200000 extends Migration {

  override name = 'Migration20261127200000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "webhook_endpoints" add "last_failed_at" timestamptz null;`);
    this.addSql(`update "webhook_endpoints" as "w" set "last_failed_at" = greatest("w"."failing_since", (select max("d"."last_attempt_at") from "webhook_deliveries" as "d" where "d"."endpoint_id" = "w"."id" and "d"."status" <> 'succeeded')) where "w"."failing_since" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webhook_endpoints" drop column "last_failed_at";`);
  }

}
