/**
 * The idle loops of a settling consumer (src/queue/idle-loops.ts), driven as the queue's loops drive
 * them, over an in-memory list standing in for the queue: while it is empty one loop polls and the
 * others are parked; a message is fetched by the polling loop; a backlog wakes every loop.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { IdleLoops } from '../src/queue/idle-loops.ts';
import { waitFor } from './support/wait.ts';

const BATCH = 4;

/** Loops consuming `queue` as src/queue/queue.ts does, counting each loop's fetches and the batches handled at once. */
function consume(count: number, handleMs: number) {
  const idle = new IdleLoops({ scoutPollMs: 20, parkedPollMs: 60_000 });
  const queue: number[] = [];
  const fetches = Array.from({ length: count }, () => 0);
  const handled: number[][] = [];
  let busy = 0;
  let mostBusy = 0;
  let stopped = false;
  const loops = fetches.map(async (_, i) => {
    const loop = idle.loop();
    while (!stopped) {
      fetches[i]! += 1;
      const batch = queue.splice(0, BATCH);
      if (batch.length === 0) {
        await idle.waitAfterEmptyFetch(loop);
        continue;
      }
      idle.fetched(loop, batch.length === BATCH);
      busy += 1;
      mostBusy = Math.max(mostBusy, busy);
      await delay(handleMs);
      handled.push(batch);
      busy -= 1;
    }
  });
  return {
    idle,
    queue,
    fetches,
    handled,
    mostBusy: () => mostBusy,
    stop: async () => {
      stopped = true;
      idle.stop();
      await Promise.all(loops);
    },
  };
}

let running: ReturnType<typeof consume> | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

describe('IdleLoops', () => {
  it('lets one loop poll an empty queue while the others are parked', async () => {
    running = consume(4, 5);
    await delay(300);
    const sorted = [...running.fetches].sort((a, b) => b - a);
    expect(running.idle.parkedCount).toBe(3);
    // The scout polled every 20 ms; the parked loops made only their first fetch.
    expect(sorted[0]).toBeGreaterThan(5);
    expect(sorted.slice(1)).toEqual([1, 1, 1]);
  });

  it('hands the watch to a parked loop while the scout works, so a message never waits for a busy loop', async () => {
    running = consume(3, 1_500);
    await delay(100);
    running.queue.push(1);
    await waitFor(async () => running!.mostBusy() === 1, 2_000, 'the scout to fetch the message');
    // The scout is busy for 1.5 s: the next message is fetched by the loop that took over the watch.
    running.queue.push(2);
    await waitFor(async () => running!.mostBusy() === 2, 1_000, 'another loop to fetch the second message');
    await waitFor(async () => running!.handled.length === 2, 5_000, 'both messages handled');
    expect(running.handled).toEqual([[1], [2]]);
  });

  it('keeps a loop watching after a full batch and then a partial one', async () => {
    running = consume(4, 1_500);
    await delay(100);
    // The scout fetches four (full) and wakes a loop, which fetches the fifth (partial): both are busy.
    running.queue.push(1, 2, 3, 4, 5);
    await waitFor(async () => running!.mostBusy() === 2, 1_000, 'two loops busy');
    running.queue.push(6);
    // A third loop took over the watch and fetches it while the other two still work.
    await waitFor(async () => running!.mostBusy() === 3, 1_000, 'a third loop to fetch the sixth message');
    expect(running.handled).toEqual([]);
  });

  it('wakes the parked loops one after another while their fetches come back full (a backlog)', async () => {
    running = consume(4, 100);
    await delay(50);
    running.queue.push(...Array.from({ length: 40 }, (_, i) => i));
    await waitFor(async () => running!.handled.flat().length === 40, 5_000, 'the backlog to drain');
    expect(running.mostBusy()).toBe(4);
    // Every batch but the backlog's last one was whole.
    expect(running.handled.filter((batch) => batch.length < BATCH).length).toBeLessThanOrEqual(1);
  });

  it('returns every waiting loop at once when stopped', async () => {
    running = consume(4, 5);
    await delay(100);
    const started = Date.now();
    await running.stop();
    running = undefined;
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
