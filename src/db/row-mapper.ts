import type { EntityName } from '@mikro-orm/core';
import type { Orm } from './orm.ts';

/**
 * A mapper from a row as a Kysely statement reads it (snake_case columns; timestamps as text or
 * Date; JSON already parsed), or as `to_jsonb` nests it, to an entity's properties, built once from
 * the ORM's metadata. For hot reads whose entities are only read and never flushed: `em.map` costs
 * an identity-map merge and a hydration per row, measured at 5% of a worker's CPU for one batch read.
 */
export function rowMapper<T extends object>(orm: Orm, entity: EntityName<T>): (row: Record<string, unknown>) => T {
  const fields = fieldsOf(orm, entity);
  return (row) => {
    const mapped: Record<string, unknown> = {};
    for (const { name, column, date } of fields) {
      const value = row[column] ?? null;
      mapped[name] = date && typeof value === 'string' ? new Date(value) : value;
    }
    return mapped as T;
  };
}

/** The entity's stored properties, each with its column. */
function fieldsOf<T extends object>(orm: Orm, entity: EntityName<T>): { name: string; column: string; date: boolean }[] {
  return orm
    .getMetadata()
    .get(entity)
    .props.filter((prop) => prop.fieldNames?.length === 1 && prop.persist !== false)
    .map((prop) => ({ name: prop.name as string, column: prop.fieldNames[0]!, date: prop.runtimeType === 'Date' }));
}

/**
 * The columns `rowMapper` reads, to name them in a statement instead of `*`: a prepared statement
 * (src/db/prepared.ts) must name its result columns, or a migration adding one breaks it.
 */
export function columnsOf<T extends object>(orm: Orm, entity: EntityName<T>): string[] {
  return fieldsOf(orm, entity).map(({ column }) => column);
}
