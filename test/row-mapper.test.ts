/**
 * The hot reads' row mapper (src/db/row-mapper.ts) reads a row as the ORM's own `em.map` does:
 * every property of the entity, timestamps as Dates, JSON as given, from top-level columns and
 * from a `to_jsonb` nesting alike.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectOrm } from '../src/database.ts';
import type { Orm } from '../src/db/orm.ts';
import { rowMapper } from '../src/db/row-mapper.ts';
import { ResellerStore } from '../src/reseller-stores/entity.ts';
import { SourceStore } from '../src/source-stores/entity.ts';
import { SyncJob } from '../src/sync-jobs/entity.ts';
import { createTestDatabase } from './support/database.ts';

let orm: Orm;
beforeAll(async () => {
  orm = await connectOrm(await createTestDatabase(), 2);
});
afterAll(() => orm?.close());

/** A row of every column of the entity's table, each with a value of its type (timestamps as text, as the driver gives them). */
type Mapped = typeof SyncJob;

function rowOf(entity: unknown): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const prop of orm.getMetadata().get(entity as Mapped).props) {
    const column = prop.fieldNames[0]!;
    if (prop.items?.length) row[column] = prop.items[0];
    else if (prop.runtimeType === 'Date') row[column] = '2026-11-25T12:34:56.789Z';
    else if (prop.runtimeType === 'number') row[column] = 7;
    else if (prop.runtimeType === 'boolean') row[column] = true;
    else if (prop.type === 'json' || prop.runtimeType === 'any' || prop.runtimeType === 'object') row[column] = { nested: [1, { a: 'b' }] };
    else row[column] = `${prop.name}-value`;
  }
  return row;
}

describe('rowMapper', () => {
  for (const [name, entity] of [['sync job', SyncJob], ['source store', SourceStore], ['reseller store', ResellerStore]] as const) {
    it(`maps a ${name} row as em.map does`, () => {
      const row = rowOf(entity);
      const expected = { ...orm.em.fork().map(entity as Mapped, { ...row }) };
      const mapped = rowMapper(orm, entity as Mapped)({ ...row });
      expect(mapped).toEqual(expected);
      expect(Object.keys(mapped).length).toBeGreaterThan(5);
      expect(Object.values(mapped).some((value) => value instanceof Date)).toBe(true);
    });
  }

  it('maps absent and null columns to null', () => {
    const mapped = rowMapper(orm, SyncJob)({ id: 'job_1', completed_at: null });
    expect(mapped.id).toBe('job_1');
    expect(mapped.completedAt).toBeNull();
    expect(mapped.sourceOrderId).toBeNull();
  });
});
