/**
 * Marked statements (src/db/prepared.ts) run as named prepared statements on the ORM's pool: parsed
 * once per connection and, once PostgreSQL settles on a generic plan, no longer planned per call.
 * Unmarked ones run as before. Read from the connection's own `pg_prepared_statements` (a pool of
 * one connection, so every statement of the test runs on it).
 */
import { sql } from 'kysely';
import type { Pool } from 'pg';
import pino from 'pino';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as delay } from 'node:timers/promises';
import { connectOrm } from '../src/database.ts';
import { POOL_OPTIONS } from '../src/db/pool.ts';
import { ormConfig } from '../mikro-orm.config.ts';
import { openOrm, type Orm } from '../src/db/orm.ts';
import { PREPARED, PREPARED_MARK, prepareMarkedStatements } from '../src/db/prepared.ts';
import { sqlOf } from '../src/db/sql.ts';
import { StatementShapes, type Slot } from '../src/db/statement-shapes.ts';
import { newMessageId, Queue, type QueueSpec } from '../src/queue/queue.ts';
import { createTestDatabase, queryRows } from './support/database.ts';

let url: string;
let orm: Orm;
beforeAll(async () => {
  url = await createTestDatabase();
  orm = await connectOrm(url, 1);
});
afterAll(() => orm?.close());

interface PreparedRow {
  name: string;
  statement: string;
  generic_plans: number;
  custom_plans: number;
}

const preparedOnConnection = async () =>
  (await sql<PreparedRow>`select name, statement, generic_plans::int, custom_plans::int from pg_prepared_statements where not from_sql`.execute(sqlOf(orm))).rows;

/** A statement shaped like the hot ones: its rows come as one jsonb parameter. */
const sumOf = async (values: number[], marked: boolean) => {
  const rows = JSON.stringify(values.map((n) => ({ n })));
  const { rows: [row] } = await sql<{ total: number }>`select coalesce(sum(r.n), 0)::int as total from jsonb_to_recordset(${rows}::jsonb) as r(n int) ${marked ? PREPARED : sql``}`.execute(sqlOf(orm));
  return row!.total;
};

describe('marked statements', () => {
  it('are prepared once per connection, answer as before, and settle on a generic plan', async () => {
    for (let i = 1; i <= 8; i++) expect(await sumOf([i, i, 1], true)).toBe(2 * i + 1);
    const prepared = (await preparedOnConnection()).filter((row) => row.statement.endsWith(PREPARED_MARK));
    expect(prepared).toHaveLength(1);
    expect(prepared[0]!.name).toMatch(/^prepared_[0-9a-f]{32}$/);
    // Five custom plans, then the generic one for every later call: no planning per call.
    expect(prepared[0]!.generic_plans).toBeGreaterThanOrEqual(3);
    expect(prepared[0]!.custom_plans).toBeLessThanOrEqual(5);
  });

  it('are left alone when unmarked', async () => {
    const before = (await preparedOnConnection()).length;
    expect(await sumOf([40, 2], false)).toBe(42);
    const after = await preparedOnConnection();
    expect(after).toHaveLength(before);
    expect(after.some((row) => row.statement.includes('40'))).toBe(false);
  });

  it('keep working inside a transaction and after a failed one on the same connection', async () => {
    await expect(
      sqlOf(orm)
        .transaction()
        .execute(async (trx) => {
          await sql`select 1 ${PREPARED}`.execute(trx);
          await sql`select 1/0 ${PREPARED}`.execute(trx);
        }),
    ).rejects.toThrow(/division by zero/);
    expect(await sumOf([1, 2, 3], true)).toBe(6);
  });

  it("include pg-boss's message insert in the caller's transaction (its text is fixed per queue)", async () => {
    const spec: QueueSpec<{ n: number }> = { name: 'test.prepared', schema: z.object({ n: z.number() }) };
    const queue = await Queue.start({ connectionString: url, logger: pino({ level: 'silent' }), supervise: false, queues: [spec] });
    try {
      const ids = [newMessageId(), newMessageId()];
      for (const [i, id] of ids.entries()) {
        await sqlOf(orm).transaction().execute((trx) => queue.insertIn(trx, spec, [{ id, message: { n: i } }]));
      }
      const inserted = await queryRows<{ id: string }>(url, 'select id::text from pgboss.job where name = $1 order by id', [spec.name]);
      expect(inserted.map((row) => row.id).sort()).toEqual([...ids].sort());
      const prepared = (await preparedOnConnection()).filter((row) => /insert into pgboss\./i.test(row.statement));
      expect(prepared).toHaveLength(1);
      expect(prepared[0]!.statement.endsWith(PREPARED_MARK)).toBe(true);
    } finally {
      await queue.stop(5_000);
    }
  });

  it("include the settling consumers' pg-boss fetch, on the queue's own pool (no parameters: planned once per connection)", async () => {
    const spec: QueueSpec<{ n: number }> = { name: 'test.prepared-fetch', schema: z.object({ n: z.number() }) };
    // One connection, so the test reads the prepared statements of the connection that fetched.
    const queue = await Queue.start({ connectionString: url, logger: pino({ level: 'silent' }), supervise: false, queues: [spec], poolMax: 1 });
    try {
      await sqlOf(orm).transaction().execute((trx) => queue.insertIn(trx, spec, [1, 2, 3].map((n) => ({ id: newMessageId(), message: { n } }))));
      const handled: number[] = [];
      queue.consumeSettling(spec, { batchSizes: [2], idlePollMs: 50, logger: pino({ level: 'silent' }) }, async (jobs) => {
        handled.push(...jobs.map((job) => (job.data as { n: number }).n));
        await queue.settleIn(sqlOf(orm), spec, jobs.map((job) => job.id));
        return new Set();
      });
      for (let waited = 0; handled.length < 3 && waited < 10_000; waited += 50) await delay(50);
      expect(handled.sort()).toEqual([1, 2, 3]);
      const { pool } = queue.boss.getDb() as unknown as { pool: Pool };
      const { rows } = await pool.query<PreparedRow>(
        `select name, statement, generic_plans::int, custom_plans::int from pg_prepared_statements where not from_sql and statement like '%next AS%'`,
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]!.statement).toContain(`j.name = '${spec.name}'`);
      // At least the fetch just made on this connection (it is replaced after its lifetime, and its statements with it).
      expect(rows[0]!.generic_plans).toBeGreaterThanOrEqual(1);
      expect(rows[0]!.custom_plans).toBe(0);
      // pg-boss hands its options to its pg pool: the lifetime that bounds the plans' age reached it.
      expect((pool as unknown as { options: { maxLifetimeSeconds?: number } }).options.maxLifetimeSeconds).toBe(POOL_OPTIONS.maxLifetimeSeconds);
    } finally {
      await queue.stop(5_000);
    }
  });

  it('are made again on the fresh connection that replaces one past its lifetime, so a plan is never older than that', async () => {
    expect(POOL_OPTIONS.maxLifetimeSeconds).toBeGreaterThan(0);
    const shortLived = await openOrm(
      ormConfig(url, { pool: { min: 0, max: 1 }, driverOptions: { ...POOL_OPTIONS, maxLifetimeSeconds: 1, onPoolCreated: prepareMarkedStatements } }),
      url,
    );
    try {
      const backend = async () => (await sql<{ pid: number }>`select pg_backend_pid() as pid ${PREPARED}`.execute(sqlOf(shortLived))).rows[0]!.pid;
      const prepared = async () => (await sql<{ n: number }>`select count(*)::int as n from pg_prepared_statements where not from_sql`.execute(sqlOf(shortLived))).rows[0]!.n;
      const first = await backend();
      expect(await prepared()).toBe(1);
      await delay(1_500);
      const second = await backend();
      expect(second).not.toBe(first);
      expect(await prepared()).toBe(1);
    } finally {
      await shortLived.close();
    }
  });
});

describe('statement shapes', () => {
  /** A statement of one shape per `op`, its rows and threshold in slots. */
  const build = (op: '>' | '<') => (slots: readonly Slot[]) =>
    sqlOf(orm)
      .with('r', () => sql<{ n: number }>`(select * from jsonb_to_recordset(${slots[0]}::jsonb) as r(n int))`)
      .selectFrom('r')
      .select(sql<number>`count(*)::int`.as('matching'))
      .where(sql<boolean>`r.n ${sql.raw(op)} ${slots[1]}::int`);

  it('are built once per shape, and each call runs with its own values', async () => {
    const shapes = new StatementShapes();
    let builds = 0;
    const run = async (op: '>' | '<', values: number[], threshold: number) => {
      const [row] = await shapes.rows(sqlOf(orm), op, (slots) => (builds++, build(op)(slots)), [JSON.stringify(values.map((n) => ({ n }))), threshold]);
      return row!.matching;
    };
    expect(await run('>', [1, 5, 9], 4)).toBe(2);
    expect(await run('>', [1, 5, 9, 12], 8)).toBe(2);
    expect(await run('>', [], 0)).toBe(0);
    expect(builds).toBe(1);
    expect(await run('<', [1, 5, 9], 6)).toBe(2);
    expect(builds).toBe(2);
    expect(shapes.size).toBe(2);
  });
});
