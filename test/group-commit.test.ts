/**
 * GroupCommit's batching rules, with a plain function as the write: which items go together, how
 * many writes run at once, and how a failing group is split so one bad item fails only its caller.
 * (Its database use is covered end to end by the webhook and worker suites.)
 */
import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../src/db/group-commit.ts';

/** A write that records each group it is given and answers each item doubled, after `ms`. */
function recordingWrite(ms = 5, fail: (items: number[]) => Error | null = () => null) {
  const groups: number[][] = [];
  const write = async (items: number[]) => {
    groups.push([...items]);
    await delay(ms);
    const error = fail(items);
    if (error) throw error;
    return items.map((item) => item * 2);
  };
  return { groups, write };
}

describe('GroupCommit', () => {
  it('writes the items submitted in one turn of the event loop together, each caller getting its own output', async () => {
    const { groups, write } = recordingWrite();
    const commit = new GroupCommit(write, { maxItems: 100, maxInFlight: 2 });
    const outputs = await Promise.all([1, 2, 3, 4].map((item) => commit.submit(item)));
    expect(outputs).toEqual([2, 4, 6, 8]);
    expect(groups).toEqual([[1, 2, 3, 4]]);
  });

  it('never puts more than maxItems in one write', async () => {
    const { groups, write } = recordingWrite();
    const commit = new GroupCommit(write, { maxItems: 3, maxInFlight: 4 });
    await Promise.all([1, 2, 3, 4, 5, 6, 7].map((item) => commit.submit(item)));
    expect(groups.map((group) => group.length)).toEqual([3, 3, 1]);
    expect(groups.flat()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('holds items that arrive while maxInFlight writes run, and writes them together in the next', async () => {
    const { groups, write } = recordingWrite(30);
    const commit = new GroupCommit(write, { maxItems: 100, maxInFlight: 1 });
    const first = commit.submit(1);
    await delay(5); // the first write is in flight now
    const later = [2, 3, 4].map((item) => commit.submit(item));
    await Promise.all([first, ...later]);
    expect(groups).toEqual([[1], [2, 3, 4]]);
  });

  it('writes the items of a failed group one by one, so only the bad item fails', async () => {
    const { groups, write } = recordingWrite(1, (items) => (items.includes(13) ? new Error('value out of range') : null));
    const commit = new GroupCommit(write, { maxItems: 100, maxInFlight: 2 });
    const results = await Promise.allSettled([11, 12, 13, 14].map((item) => commit.submit(item)));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([22, 24, 'value out of range', 28]);
    expect(groups[0]).toEqual([11, 12, 13, 14]);
    expect(groups.slice(1).map((group) => group.length)).toEqual([1, 1, 1, 1]);
  });

  it('fails the whole group at once when the database cannot be reached, without retrying each item', async () => {
    const unreachable = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const { groups, write } = recordingWrite(1, () => unreachable);
    const commit = new GroupCommit(write, { maxItems: 100, maxInFlight: 2 });
    const results = await Promise.allSettled([1, 2, 3].map((item) => commit.submit(item)));
    expect(results.every((r) => r.status === 'rejected' && r.reason === unreachable)).toBe(true);
    expect(groups).toEqual([[1, 2, 3]]);
  });
});
