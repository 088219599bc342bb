/**
 * The settling consumer (src/queue/queue.ts `consumeSettling`) on the real queue: the handler
 * settles messages in its own statements, those it returns are failed back for redelivery, a
 * handler that throws has its batch failed, and a backlog gets its job table's statistics refreshed.
 */
import { Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { connectOrm } from '../src/database.ts';
import type { Orm } from '../src/db/orm.ts';
import { sqlOf } from '../src/db/sql.ts';
import { newMessageId, Queue, type QueueSpec } from '../src/queue/queue.ts';
import { createTestDatabase, queryRows } from './support/database.ts';
import { waitFor } from './support/wait.ts';

const spec: QueueSpec<{ n: number }> = { name: 'test.settling', schema: z.object({ n: z.number() }) };
const logger = pino({ level: 'silent' });

let url: string;
let orm: Orm;
let queue: Queue;

beforeAll(async () => {
  url = await createTestDatabase();
  orm = await connectOrm(url, 2);
  queue = await Queue.start({ connectionString: url, logger, supervise: false, queues: [spec] });
});
afterAll(async () => {
  await queue?.stop(5_000);
  await orm?.close();
});

async function send(messages: number[]): Promise<string[]> {
  const ids = messages.map(() => newMessageId());
  await sqlOf(orm).transaction().execute((trx) => queue.insertIn(trx, spec, messages.map((n, i) => ({ id: ids[i]!, message: { n } }))));
  return ids;
}

const states = async (ids: string[]) =>
  Object.fromEntries((await queryRows<{ id: string; state: string }>(url, 'select id::text, state::text from pgboss.job where id = any($1::uuid[])', [ids])).map((r) => [r.id, r.state]));

describe('consumeSettling', () => {
  it('leaves settling to the handler: settled messages complete, returned ones are failed back, a throw fails its batch', async () => {
    const ids = await send([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    const seen = new Map<number, number>();
    queue.consumeSettling(spec, { batchSizes: [8, 8], idlePollMs: 50, logger }, async (jobs) => {
      const unsettled = new Set<string>();
      const settle: string[] = [];
      for (const job of jobs) {
        const { n } = job.data as { n: number };
        seen.set(n, (seen.get(n) ?? 0) + 1);
        if (n === 13) throw new Error('a batch that cannot be read');
        if (n % 5 === 0) unsettled.add(job.id);
        else settle.push(job.id);
      }
      await queue.settleIn(sqlOf(orm), spec, settle);
      return unsettled;
    });
    // All but 13 and the multiples of 5; 13's batch-mates were failed back with it and complete when delivered again.
    await waitFor(async () => Object.values(await states(ids)).filter((s) => s === 'completed').length === 15, 15_000, 'the settled messages to complete');
    await delay(300);
    const after = await states(ids);
    for (const [i, id] of ids.entries()) {
      const n = i + 1;
      if (n % 5 === 0) expect(after[id], `message ${n}`).not.toBe('completed');
      else if (n !== 13) expect(after[id], `message ${n}`).toBe('completed');
    }
    // The throwing batch was failed back whole: its message 13 is not completed, and is delivered again.
    expect(after[ids[12]!]).not.toBe('completed');
    await waitFor(async () => (seen.get(13) ?? 0) >= 2, 15_000, 'message 13 to be delivered again');
    // Each settled message was handled once.
    for (const n of [1, 2, 3, 4, 6, 7]) expect(seen.get(n) ?? 0, `message ${n}`).toBeGreaterThanOrEqual(1);
  });

  it("refreshes the job table's statistics when its fetches come back full (a backlog)", async () => {
    const analyzed = async () =>
      (await queryRows<{ n: string }>(url, `select coalesce(max(analyze_count), 0) as n from pg_stat_user_tables where schemaname = 'pgboss' and relname = 'job_common'`))[0]!.n;
    await waitFor(async () => Number(await analyzed()) >= 1, 10_000, 'an ANALYZE of pgboss.job_common');
  });

  it('logs a queue whose fetches fail once, not once per loop and poll, and says when they work again', async () => {
    const lines: Record<string, unknown>[] = [];
    const capture = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    // A queue that does not exist yet: pg-boss refuses every fetch from it, as it would with the database away.
    const missing: QueueSpec<{ n: number }> = { name: 'test.settling-missing', schema: z.object({ n: z.number() }) };
    queue.consumeSettling(missing, { batchSizes: [8, 8, 8], idlePollMs: 50, logger: pino({ level: 'info' }, capture) }, async () => new Set());
    const failedLines = () => lines.filter((line) => line.queue === missing.name && String(line.msg).startsWith('queue fetch'));
    // Three loops polling every 0.5 s for 2 s: a dozen failed fetches, one line.
    await delay(2_000);
    expect(failedLines().map((line) => line.msg)).toEqual(['queue fetch failed; trying again']);
    await queue.boss.createQueue(missing.name);
    await waitFor(async () => failedLines().length === 2, 10_000, 'the fetches to work again');
    const [, recovered] = failedLines();
    expect(recovered).toMatchObject({ msg: 'queue fetch works again', level: 40 });
    expect(recovered!.failures).toBeGreaterThanOrEqual(6);
  });
});
