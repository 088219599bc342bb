/**
 * The typed Kysely schema (src/db/schema.ts, hand-written) against the migrated database: every
 * declared table has exactly the declared columns, each with its declared type, nullability and
 * default. Without this check a migration could change a column the repositories' typed queries
 * still compile against.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { TABLES } from '../src/db/schema.ts';
import { createTestDatabase, queryRows } from './support/database.ts';

interface ColumnRow {
  table_name: string;
  column_name: string;
  data_type: string;
  is_nullable: 'YES' | 'NO';
  column_default: string | null;
}

let columns: ColumnRow[];
beforeAll(async () => {
  const url = await createTestDatabase();
  columns = await queryRows<ColumnRow>(
    url,
    `select table_name, column_name, data_type, is_nullable, column_default
       from information_schema.columns where table_schema = 'public' and table_name = any($1::text[])`,
    [Object.keys(TABLES)],
  );
});

describe('the declared database schema', () => {
  it.each(Object.entries(TABLES))('matches the migrated %s table', (table, declared) => {
    const migrated = Object.fromEntries(
      columns
        .filter((column) => column.table_name === table)
        .map((column) => [
          column.column_name,
          column.data_type + (column.is_nullable === 'YES' ? ' null' : '') + (column.column_default !== null ? ' default' : ''),
        ]),
    );
    expect(migrated).toEqual(declared);
  });
});
