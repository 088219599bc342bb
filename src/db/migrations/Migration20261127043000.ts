import { Migration } from '@mikro-orm/migrations';

/**
 * A process that stops gracefully (SIGTERM) hands its reconciliation runs and divergence-watch
 * passes back instead of leaving them `running` under a lease nobody renews: `handed_back` lets
 * another process take the run over at once (src/db/locks.ts `handBackRun`, `takeRun`), and a run's
 * `resume_since` is where its listing goes on (what the stopped process had listed is kept).
 */
export class Migration20261127043000 extends Migration {

  override name = 'Migration20261127043000';

  override up(): void | Promise<void> {
    this.addSql(`alter table "reconciliation_runs" add "handed_back" boolean not null default false, add "resume_since" timestamptz null;`);
    this.addSql(`alter table "watch_passes" add "handed_back" boolean not null default false;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "reconciliation_runs" drop column "handed_back", drop column "resume_since";`);
    this.addSql(`alter table "watch_passes" drop column "handed_back";`);
  }

}
