import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectOrm, type Orm } from '../src/db/orm.ts';
import { queryRows } from './support/database.ts';

/** Every table the entities declare (src/db/entities.ts). */
const TABLES = [
  'api_keys',
  'audit_entries',
  'fulfillments',
  'reconciliation_runs',
  'reconciliation_watermarks',
  'refresh_tokens',
  'reseller_stores',
  'routed_orders',
  'source_stores',
  'sync_jobs',
  'users',
];

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: inject('pgAdminUrl') });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** An empty database: from template0, so not even the test template's migrations are in it. */
async function createEmptyDatabase(): Promise<{ name: string; url: string }> {
  const name = `empty_${randomBytes(6).toString('hex')}`;
  await admin((client) => client.query(`create database ${name} template template0`));
  const url = new URL(inject('pgAdminUrl'));
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

const tablesOf = async (url: string) =>
  (
    await queryRows<{ table_name: string }>(
      url,
      `select table_name from information_schema.tables where table_schema = 'public' order by table_name`,
    )
  ).map((row) => row.table_name);

let database: { name: string; url: string };
let orm: Orm | undefined;
beforeAll(async () => {
  database = await createEmptyDatabase();
});
afterAll(async () => {
  await orm?.close();
  await admin((client) => client.query(`drop database if exists ${database.name} with (force)`));
});

describe('migrations', () => {
  it('apply to an empty database', async () => {
    expect(await tablesOf(database.url)).toEqual([]);
    orm = await connectOrm(database.url, 2);
    const tables = await tablesOf(database.url);
    expect(tables).toEqual(expect.arrayContaining(TABLES));
    expect(tables).toContain('mikro_orm_migrations');
    expect(await orm.migrator.getPending()).toEqual([]);
  });

  it('running them again is a no-op', async () => {
    const before = await queryRows(database.url, 'select name, executed_at from mikro_orm_migrations order by id');
    expect(before.length).toBeGreaterThan(0);
    const again = await connectOrm(database.url, 2);
    try {
      expect(await again.migrator.up()).toEqual([]);
    } finally {
      await again.close();
    }
    expect(await queryRows(database.url, 'select name, executed_at from mikro_orm_migrations order by id')).toEqual(before);
  });

  it('leave no difference between the entities and the migrated schema', async () => {
    const diff = await orm!.schema.getUpdateSchemaSQL({ wrap: false });
    expect(diff.trim(), `entities and migrations disagree; run \`npm run migration:create\`:\n${diff}`).toBe('');
  });

  it('enforce the partial unique indexes the services rely on', async () => {
    const indexes = (
      await queryRows<{ indexdef: string }>(database.url, `select indexdef from pg_indexes where schemaname = 'public'`)
    ).map((row) => row.indexdef);
    expect(indexes.some((d) => /UNIQUE INDEX reseller_stores_active_shop_domain_unique .*\(shop_domain\) WHERE \(deleted_at IS NULL\)/.test(d))).toBe(true);
    expect(
      indexes.some((d) => /UNIQUE INDEX source_stores_active_vendor_key_unique .*\(reseller_store_id, vendor_key\) WHERE \(deleted_at IS NULL\)/.test(d)),
    ).toBe(true);
    // One running reconciliation per store, across every process.
    expect(
      indexes.some((d) => /UNIQUE INDEX reconciliation_runs_one_running_per_store .*\(reseller_store_id\) WHERE \(status = 'running'::text\)/.test(d)),
    ).toBe(true);
  });
});
