import { sql, type RawBuilder } from 'kysely';
import type { Db, Trx } from '../db/sql.ts';

/**
 * The step of a statement that settles queue messages (marks them completed, as pg-boss's own
 * completion does) with whatever else the statement writes, so a message is done exactly when the
 * state change it caused commits. `ids` is a uuid[] expression. Any message not yet completed,
 * failed or cancelled is settled, whoever holds it: the caller has recorded what the message asked
 * for, so a redelivery would find nothing to do. By primary key (name, id = any(array)), so the
 * plan does not depend on the statistics of the job table, stale after any burst.
 */
export function settledMessagesStep(queueName: string, ids: RawBuilder<unknown>): RawBuilder<{ id: string }> {
  return sql<{ id: string }>`(
    update pgboss.job set state = 'completed', completed_on = now()
    where name = ${queueName} and id = any(${ids}) and state < 'completed'
    returning id)`;
}

/**
 * The join condition of a row's queue message: pg-boss's job `message` of `queueName` whose id is the
 * row's `messageId` column, by primary key. A column that holds no uuid (a legacy or hand-written id)
 * names no message, rather than failing the whole statement's cast.
 */
export function messageOfRow(message: string, queueName: string, messageId: string): RawBuilder<boolean> {
  const column = sql.ref(messageId);
  return sql<boolean>`${sql.ref(`${message}.name`)} = ${queueName}
    and ${sql.ref(`${message}.id`)} = case when ${column} ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then ${column}::uuid end`;
}

/**
 * Moves the start of messages not delivered yet (`created`) of a queue to `delayMs` from now, each
 * its own: a watchdog whose attempt is still running is put off while the attempt's process lives.
 * A message delivered or deleted meanwhile is left as it is.
 */
export async function deferMessages(db: Db | Trx, queueName: string, messages: { id: string; delayMs: number }[]): Promise<void> {
  if (messages.length === 0) return;
  await sql`
    update pgboss.job j set start_after = now() + d.delay_ms * interval '1 millisecond'
    from unnest(${messages.map((m) => m.id)}::uuid[], ${messages.map((m) => m.delayMs)}::int[]) as d(id, delay_ms)
    where j.name = ${queueName} and j.id = d.id and j.state = 'created'`.execute(db);
}

/** Settles these messages of a queue, in the caller's transaction (or on their own). */
export async function settleMessages(db: Db | Trx, queueName: string, ids: string[]): Promise<void> {
  await sql`with settled as ${settledMessagesStep(queueName, sql`${ids}::uuid[]`)} select count(*) from settled`.execute(db);
}

/**
 * Refreshes the planner's statistics of a pg-boss job table (`table` as pg-boss names it). After a
 * burst they say a queue holds a handful of messages, and pg-boss's fetch then sorts the whole
 * backlog on every call instead of walking its index in order (measured: 2.8 ms a fetch for a
 * 10,000-message backlog, 0.3 ms once analysed). Samples the table; takes no lock that blocks writes.
 */
export async function analyzeJobTable(db: { executeSql(text: string): Promise<unknown> }, table: string): Promise<void> {
  if (!/^[a-z0-9_]+$/.test(table)) throw new Error(`unexpected job table name: ${table}`);
  await db.executeSql(`analyze pgboss.${table}`);
}
