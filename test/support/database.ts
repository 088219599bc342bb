import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';

const TEMPLATE_DATABASE = 'service_template';

/** A fresh, migrated database for one test file; returns its connection string. */
export async function createTestDatabase(): Promise<string> {
  const adminUrl = inject('pgAdminUrl');
  const name = `test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name} template ${TEMPLATE_DATABASE}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs one parameterised query against a database, for assertions on raw rows. */
export async function queryRows<T = Record<string, unknown>>(databaseUrl: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

/**
 * From now on, records every change of `table.column` in this test file's database (a trigger
 * writing to `column_writes`), and returns a reader of the values a row was given, in order: how
 * often a value was written, which the row itself cannot tell.
 */
export async function watchColumnWrites(databaseUrl: string, table: string, column: string): Promise<(id: string) => Promise<string[]>> {
  if (!/^[a-z_]+$/.test(table) || !/^[a-z_]+$/.test(column)) throw new Error('plain identifiers only');
  await queryRows(databaseUrl, 'create table if not exists column_writes (seq bigserial, table_name text, row_id text, value text)');
  await queryRows(
    databaseUrl,
    `create or replace function record_column_write() returns trigger language plpgsql as $$
     begin insert into column_writes (table_name, row_id, value) values (TG_TABLE_NAME, new.id, to_jsonb(new) ->> TG_ARGV[0]); return new; end $$`,
  );
  await queryRows(
    databaseUrl,
    `create or replace trigger ${table}_${column}_writes after update of ${column} on ${table} for each row
     when (old.${column} is distinct from new.${column}) execute function record_column_write('${column}')`,
  );
  return async (id) =>
    (await queryRows<{ value: string }>(databaseUrl, 'select value from column_writes where table_name = $1 and row_id = $2 order by seq', [table, id])).map(
      (row) => row.value,
    );
}
