import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, type Options } from '@mikro-orm/postgresql';
import type { Pool } from 'pg';
import { entities } from './src/entities.ts';
import { POOL_OPTIONS, releaseClosedConnections } from './src/db/pool.ts';
import { prepareMarkedStatements } from './src/db/prepared.ts';

/**
 * ORM settings shared by the service, the tests and the MikroORM CLI. The connection string is
 * passed in at run time (embedded or DATABASE_URL); the CLI reads DATABASE_URL.
 */
export function ormConfig(clientUrl: string, overrides: Partial<Options> = {}): Options {
  return defineConfig({
    clientUrl,
    entities,
    extensions: [Migrator],
    migrations: {
      path: './src/db/migrations',
      glob: '!(*.d).{js,ts}',
      transactional: true,
      snapshot: false,
      silent: true,
    },
    pool: { min: 0, max: 10 },
    // Bounded waits and no leaked connections when the database goes away (src/db/pool.ts); the hot
    // paths' marked statements prepared once per connection (src/db/prepared.ts).
    driverOptions: {
      ...POOL_OPTIONS,
      onPoolCreated: (pool: Pool) => {
        releaseClosedConnections(pool);
        prepareMarkedStatements(pool);
      },
    },
    allowGlobalContext: false,
    debug: false,
    ...overrides,
  });
}

export default ormConfig(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
