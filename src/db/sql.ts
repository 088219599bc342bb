import type { EntityManager } from '@mikro-orm/postgresql';
import type { Kysely, RawBuilder, Transaction } from 'kysely';
import type { Orm } from './orm.ts';
import type { Database } from './schema.ts';

/**
 * The ORM's own Kysely instance, typed with the declared schema (schema.ts), for the repositories'
 * statements where the unit of work would cost several round trips and most of a request's CPU
 * (an order webhook, a worker's attempt). Every value is a bound parameter; it runs on the ORM's pool.
 */
export type Db = Kysely<Database>;
export type Trx = Transaction<Database>;

/** A step of SQL built by one module for a statement another runs (e.g. a kind's `onSettled`, src/attempts/kind.ts). */
export type SqlStep = RawBuilder<unknown>;

export function sqlOf(orm: Orm): Db {
  return orm.em.getConnection().getClient() as unknown as Db;
}

/** Database health: one round trip on the ORM's pool. */
export async function pingDatabase(orm: Orm): Promise<void> {
  await orm.em.getConnection().execute('select 1');
}

/** The Kysely transaction under an ORM transaction (`em.transactional`), for the outbox and queue inserts that join it. */
export function transactionOf(em: EntityManager): Trx {
  const trx = em.getTransactionContext<Trx>();
  if (!trx) throw new Error('not inside a transaction');
  return trx;
}
