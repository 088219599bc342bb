import { createHash } from 'node:crypto';
import { sql, type RawBuilder } from 'kysely';
import type { Pool, PoolClient } from 'pg';

/**
 * The mark at the end of a statement's text that makes it a named prepared statement on each
 * connection (`prepareMarkedStatements`): parsed once per connection and, once PostgreSQL settles on
 * a generic plan (after five executions, when its estimates do not depend on the parameters, as
 * with a `jsonb_to_recordset` of the rows), no longer planned at every call. For the hot paths' big
 * statements, whose planning costs more than their execution (measured: the attempt transition
 * statement 1.2-1.8 ms of planning against 0.6-1 ms of execution).
 *
 * A generic plan is made for the tables' sizes at that moment and kept until a table's statistics
 * change (ANALYZE) or the connection ends. Made on a young table it can scan a table that has grown
 * since (measured: the worker's take at 12 ms a call instead of 2.6 on a database filled during the
 * bench's stream), so the pool replaces connections after POOL_OPTIONS.maxLifetimeSeconds
 * (src/db/pool.ts) and no plan is older than that. A statement that joins its rows to a growing table
 * is better not marked: the routing's job insert once found existing jobs that way, and its generic
 * plan, made during a warm-up, hash-joined a seq scan of sync_jobs (9.3 ms a call instead of 1.9); it
 * is marked now that it only inserts (src/sync-jobs/repository.ts `insertNew`).
 *
 * Only for statements whose result columns are named, not `*`: a migration that adds a column
 * would otherwise make a connection's prepared statement fail ("cached plan must not change result
 * type") until the connection is replaced.
 */
export const PREPARED_MARK = '/* prepared */';

/** The mark as a piece of a Kysely query (`.modifyEnd(PREPARED)`), or at the end of an `sql` template. */
export const PREPARED: RawBuilder<unknown> = sql.raw(` ${PREPARED_MARK}`);

/** Distinct statement texts given a name (marked ones and the queue's fetches), at most; past it a statement runs unnamed (as before), so a text built per call cannot grow the map or the server's memory without bound. */
const MAX_PREPARED = 256;

const names = new Map<string, string>();

/**
 * The statement's name: a hash of its text, so one name always means one text on every connection.
 * Undefined past MAX_PREPARED distinct texts (the statement then runs unnamed).
 */
export function preparedName(text: string): string | undefined {
  const known = names.get(text);
  if (known !== undefined || names.size >= MAX_PREPARED) return known;
  const name = `prepared_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
  names.set(text, name);
  return name;
}

type Query = PoolClient['query'];

/**
 * Runs every statement of the pool that ends with PREPARED_MARK as a named prepared statement
 * (`pg` parses a name once per connection and keeps it with the connection, so a new connection
 * prepares it again). Anything else runs as before.
 */
export function prepareMarkedStatements(pool: Pool): void {
  pool.on('connect', (client) => {
    const query = client.query as (...args: unknown[]) => unknown;
    client.query = function (this: PoolClient, config: unknown, ...rest: unknown[]) {
      const name = typeof config === 'string' && config.endsWith(PREPARED_MARK) ? preparedName(config) : undefined;
      return query.call(this, name === undefined ? config : { name, text: config }, ...rest);
    } as Query;
  });
}

/** How many distinct marked statements this process has named (for tests). */
export const preparedStatementCount = (): number => names.size;
