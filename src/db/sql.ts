import type { Kysely } from 'kysely';
import type { Orm } from './orm.ts';

/**
 * The ORM's own Kysely instance, for the hot paths (an order webhook, a worker's attempt) where
 * the unit of work would cost several round trips and most of a request's CPU: statements are
 * written with Kysely's `sql` tag, so every value is a bound parameter, on the ORM's pool.
 */
export type Db = Kysely<unknown>;

export function sqlOf(orm: Orm): Db {
  return orm.em.getConnection().getClient() as unknown as Db;
}
