/**
 * The settling consumer's heartbeat (src/queue/queue.ts `#handleBatch`): while a batch is being
 * handled, its messages' heartbeat is kept, so pg-boss's supervisor, which fails and redelivers a
 * message whose heartbeat lapsed (its worker taken for dead), leaves a message that is still being
 * worked on to its worker, however long the handler takes. A message nobody touches is redelivered
 * by the same supervisor pass (the control: the pass does fail what has lapsed).
 *
 * pg-boss refuses a heartbeat under 10 s (heartbeatSeconds >= 10), the value QUEUE_OPTIONS uses, so
 * the test runs in real time just past it (about 12 s) and runs the supervisor pass itself rather
 * than waiting for the timer (the consumers here do not supervise).
 */
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { connectOrm } from '../src/database.ts';
import type { Orm } from '../src/db/orm.ts';
import { sqlOf } from '../src/db/sql.ts';
import { newMessageId, Queue, type QueueSpec } from '../src/queue/queue.ts';
import { createTestDatabase, queryRows } from './support/database.ts';
import { waitFor } from './support/wait.ts';

const spec: QueueSpec<{ n: number }> = { name: 'test.heartbeat', schema: z.object({ n: z.number() }) };
const logger = pino({ level: 'silent' });

let url: string;
let orm: Orm;
/** Two consumers of the queue, as two worker processes would be: each its own pg-boss. */
let consumers: Queue[] = [];

beforeAll(async () => {
  url = await createTestDatabase();
  orm = await connectOrm(url, 2);
  for (let i = 0; i < 2; i++) consumers.push(await Queue.start({ connectionString: url, logger, supervise: false, queues: [spec] }));
});
afterAll(async () => {
  for (const consumer of consumers) await consumer.stop(5_000);
  consumers = [];
  await orm?.close();
});

async function send(n: number): Promise<string> {
  const id = newMessageId();
  await sqlOf(orm).transaction().execute((trx) => consumers[0]!.insertIn(trx, spec, [{ id, message: { n } }]));
  return id;
}

interface Stored {
  state: string;
  retry_count: number;
  /** Seconds since the message was taken, by the database's clock. */
  taken_for: number;
  /** Seconds since its heartbeat was last refreshed. */
  silent_for: number;
  heartbeat_seconds: number;
}

async function stored(id: string): Promise<Stored> {
  const [row] = await queryRows<Stored>(
    url,
    `select state::text, retry_count, heartbeat_seconds,
            extract(epoch from now() - started_on)::float8 as taken_for,
            extract(epoch from now() - heartbeat_on)::float8 as silent_for
       from pgboss.job where id = $1`,
    [id],
  );
  return row!;
}

it('keeps a message whose handler outlasts the heartbeat with its worker, and redelivers one nobody touches', async () => {
  // The control: a message taken by a worker that then goes silent (fetched, never touched).
  const abandoned = await send(1);
  const [taken] = await consumers[0]!.boss.fetch(spec.name, { batchSize: 1 });
  expect(taken?.id).toBe(abandoned);

  // The slow one: its handler runs until the test lets it finish.
  const slow = await send(2);
  const deliveries: { id: string; retryCount: number; consumer: number }[] = [];
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  for (const [index, consumer] of consumers.entries()) {
    consumer.consumeSettling(spec, { batchSizes: [1, 1], idlePollMs: 50, logger }, async (jobs) => {
      for (const job of jobs) {
        deliveries.push({ id: job.id, retryCount: job.retryCount, consumer: index });
        if (job.id === slow) await finished;
      }
      await consumer.settleIn(sqlOf(orm), spec, jobs.map((job) => job.id));
      return new Set();
    });
  }
  await waitFor(async () => deliveries.some((delivery) => delivery.id === slow), 10_000, 'the slow message to be taken');

  // Past the heartbeat of both: without the consumer's touches the slow message would have lapsed too.
  const heartbeatSeconds = (await stored(slow)).heartbeat_seconds;
  expect(heartbeatSeconds).toBe(10);
  await waitFor(async () => (await stored(slow)).taken_for > heartbeatSeconds + 0.5 && (await stored(abandoned)).silent_for > heartbeatSeconds + 0.5, 20_000, 'the heartbeat period to pass');
  const before = await stored(slow);
  expect(before.state).toBe('active');
  // Touched while its handler runs (every 5 s): its heartbeat is recent although it was taken long ago.
  expect(before.silent_for).toBeLessThan(heartbeatSeconds - 2);

  await consumers[1]!.boss.supervise(spec.name);

  // The untouched message was failed for its heartbeat and goes to a consumer again...
  // (pg-boss counts the retry when it hands the message out again.)
  const afterPass = await stored(abandoned);
  expect(afterPass.state === 'retry' || afterPass.retry_count === 1, JSON.stringify(afterPass)).toBe(true);
  await waitFor(async () => deliveries.some((delivery) => delivery.id === abandoned), 10_000, 'the abandoned message to be delivered again');
  expect(deliveries.filter((delivery) => delivery.id === abandoned)).toEqual([expect.objectContaining({ retryCount: 1 })]);
  // ...while the slow one is still its first worker's: active, never retried, delivered to no one else.
  expect(await stored(slow)).toMatchObject({ state: 'active', retry_count: 0 });
  expect(deliveries.filter((delivery) => delivery.id === slow)).toHaveLength(1);

  finish();
  await waitFor(async () => (await stored(slow)).state === 'completed' && (await stored(abandoned)).state === 'completed', 10_000, 'both messages to complete');
  expect(await stored(slow)).toMatchObject({ retry_count: 0 });
  expect(deliveries.filter((delivery) => delivery.id === slow)).toHaveLength(1);
}, 45_000);
