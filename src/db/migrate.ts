import pg from 'pg';
import type { MikroORM } from '@mikro-orm/postgresql';

const MIGRATION_LOCK = 4_201_337;

/**
 * Applies pending migrations while holding a PostgreSQL advisory lock, so API and worker
 * processes starting together against one database migrate it exactly once.
 */
export async function migrate(orm: MikroORM, clientUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: clientUrl, application_name: 'order-routing-migrate' });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await orm.migrator.up();
  } finally {
    await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    await client.end();
  }
}
