/**
 * `npm run migration:create`: diffs the entities against a database migrated to the latest
 * committed migration and writes the difference as a new migration file. Runs on a throw-away
 * embedded PostgreSQL, so it needs no set-up.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/postgresql';
import { ormConfig } from '../mikro-orm.config.ts';
import { deleteDataDir, startEmbeddedPostgres } from '../src/db/embedded.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'migration-'));
const db = await startEmbeddedPostgres({ dataDir: dir });
try {
  const orm = await MikroORM.init(ormConfig(db.url()));
  await orm.migrator.up();
  const result = await orm.migrator.create(undefined, false, process.argv.includes('--initial'));
  console.log(result.fileName ? `created ${result.fileName}` : 'entities and migrations agree: nothing to create');
  await orm.close();
} finally {
  await db.stop();
  deleteDataDir(dir);
}
