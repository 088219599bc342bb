import { sql } from 'kysely';
import type { Trx } from './sql.ts';

/**
 * Takes the turn named `name` for the rest of the transaction, unless another process holds it
 * (a transaction-scoped advisory lock): periodic work that one process at a time should do.
 */
export async function takeTurn(trx: Trx, name: string): Promise<boolean> {
  const { rows } = await sql<{ taken: boolean }>`select pg_try_advisory_xact_lock(hashtext(${name})) as taken`.execute(trx);
  return rows[0]?.taken === true;
}
