/**
 * The shared per-store pacing (src/pacing/) on the real database: the token bucket's turns, the
 * pause a 429 sets, turns held by postponed messages, and two pacers (two processes) sharing one
 * store's allowance.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectOrm } from '../src/database.ts';
import type { Orm } from '../src/db/orm.ts';
import { sqlOf } from '../src/db/sql.ts';
import { attemptTurns } from '../src/pacing/attempt-turns.ts';
import { BOOKING_HORIZON_MS, SharedPacer } from '../src/pacing/pacer.ts';
import { PacingRepository, type TurnRequest } from '../src/pacing/repository.ts';
import { createTestDatabase } from './support/database.ts';

let orm: Orm;
let repository: PacingRepository;
let storeCount = 0;

beforeAll(async () => {
  orm = await connectOrm(await createTestDatabase(), 4);
  repository = new PacingRepository(sqlOf(orm));
});
afterAll(() => orm?.close());

const newStore = () => `sst_pacing_${++storeCount}`;

/** 10 calls a second, bursts of 3 unless told. */
const request = (storeId: string, heldAt: Date | null = null, burst = 3): TurnRequest => ({ storeId, spacingMs: 100, burst, heldAt });

describe('turns', () => {
  it('lets a burst go at once, then one call per spacing, in request order', async () => {
    const store = newStore();
    const turns = await repository.reserve(Array.from({ length: 6 }, () => request(store)), 1_000);
    const waits = turns.map((turn) => turn.waitMs);
    expect(waits.slice(0, 3)).toEqual([0, 0, 0]);
    expect(waits[3]).toBeGreaterThan(90);
    expect(waits[3]).toBeLessThanOrEqual(100);
    expect(turns[4]!.at.getTime() - turns[3]!.at.getTime()).toBe(100);
    expect(turns[5]!.at.getTime() - turns[4]!.at.getTime()).toBe(100);

    // Reserved separately, the next turn follows the last one.
    const [next] = await repository.reserve([request(store)], 1_000);
    expect(next!.at.getTime() - turns[5]!.at.getTime()).toBe(100);
  });

  it('keeps stores apart: one store in debt does not delay another', async () => {
    const busy = newStore();
    const idle = newStore();
    const turns = await repository.reserve([...Array.from({ length: 20 }, () => request(busy)), request(idle)], 1_000);
    expect(turns[19]!.waitMs).toBeGreaterThan(1_500);
    expect(turns[20]!.waitMs).toBe(0);
  });

  it('after a pause, resumes with one call at its end, then one per spacing', async () => {
    const store = newStore();
    const pausedAt = Date.now();
    const until = await repository.pause(store, 2_000, 100, 3);
    const turns = await repository.reserve([request(store), request(store), request(store)], 1_000);
    expect(turns[0]!.at.getTime()).toBe(until.getTime());
    expect(turns[1]!.at.getTime() - turns[0]!.at.getTime()).toBe(100);
    expect(turns[2]!.at.getTime() - turns[1]!.at.getTime()).toBe(100);
    // The pause is 2 s from when it was set (the same host's clock), however long the statements took.
    expect(until.getTime()).toBeGreaterThanOrEqual(pausedAt + 2_000 - 1);
    expect(turns[0]!.waitMs).toBeGreaterThan(0);

    // A shorter pause does not cut a longer one short.
    expect((await repository.pause(store, 10, 100, 3)).getTime()).toBe(until.getTime());
  });

  it("gives back unused turns, but none into a pause another attempt's 429 set meanwhile", async () => {
    const store = newStore();
    // An attempt books four turns (bursts of 1: the last is 300 ms away), then fails and gives three back.
    await repository.reserve(Array.from({ length: 4 }, () => request(store, null, 1)), 1_000);
    await repository.release(store, 3, 100);
    const [afterRelease] = await repository.reserve([request(store, null, 1)], 1_000);
    expect(afterRelease!.waitMs).toBeLessThanOrEqual(100);
    // Booked again, then another attempt's 429 pauses the store for 2 s before the turns are given back.
    await repository.reserve(Array.from({ length: 4 }, () => request(store, null, 1)), 1_000);
    const until = await repository.pause(store, 2_000, 100, 1);
    await repository.release(store, 3, 100);
    const [next] = await repository.reserve([request(store, null, 1)], 1_000);
    expect(next!.at.getTime()).toBeGreaterThanOrEqual(until.getTime());
  });

  it('honours a held turn at no cost, unless a pause now covers it or it is too late', async () => {
    // Bursts of 1, so every charged call moves the next fresh turn by one spacing.
    const store = newStore();
    const single = (heldAt: Date | null = null) => request(store, heldAt, 1);
    // Twenty turns ahead: the last one lies about 2 s ahead, so it is held well within the tolerance.
    const queued = await repository.reserve(Array.from({ length: 20 }, () => single()), 1_000);
    const held = queued.at(-1)!.at;
    // Held: the same turn back, and the bucket is not charged again: the next fresh turn follows the held one.
    const [again, fresh] = await repository.reserve([single(held), single()], 1_000);
    expect(again!.at.getTime()).toBe(held.getTime());
    expect(fresh!.at.getTime() - held.getTime()).toBe(100);

    // Too late (a worker that stalled): a fresh turn instead, charged like any other, so the turn after it moves back one spacing.
    const stale = new Date(Date.now() - 5_000);
    const [late, next] = await repository.reserve([single(stale), single()], 1_000);
    expect(late!.at.getTime() - fresh!.at.getTime()).toBe(100);
    expect(next!.at.getTime() - fresh!.at.getTime()).toBe(200);

    // Covered by a pause that began after it was reserved: a fresh turn after the pause.
    const until = await repository.pause(store, 3_000, 100, 1);
    const [covered] = await repository.reserve([single(new Date())], 1_000);
    expect(covered!.at.getTime()).toBeGreaterThanOrEqual(until.getTime());
  });
});

describe('the booking horizon', () => {
  /** An ordinary attempt's call, booked at most a second ahead (10 calls a second, bursts of 3). */
  const ordinary = (storeId: string): TurnRequest => ({ ...request(storeId), horizonMs: 1_000 });

  it('books ordinary calls up to the horizon; the rest book nothing and get estimates, in order; an urgent call books right after the booked horizon', async () => {
    const store = newStore();
    const turns = await repository.reserve(Array.from({ length: 20 }, () => ordinary(store)), 1_000);
    // The burst (3) and ten calls a spacing apart, up to a second ahead, are booked.
    const booked = turns.filter((turn) => turn.booked);
    expect(booked).toHaveLength(13);
    expect(turns.slice(0, 13).every((turn) => turn.booked && !turn.estimated)).toBe(true);
    expect(Math.max(...booked.map((turn) => turn.waitMs))).toBeLessThanOrEqual(1_000);
    // The other seven wait in line: their estimates follow the booked turns a spacing apart, first come first.
    const estimated = turns.slice(13);
    expect(estimated.every((turn) => turn.estimated && !turn.booked)).toBe(true);
    expect(estimated[0]!.at.getTime() - booked.at(-1)!.at.getTime()).toBe(100);
    estimated.slice(1).forEach((turn, i) => expect(turn.at.getTime() - estimated[i]!.at.getTime()).toBe(100));

    // An urgent call (no horizon) books the store's real next turn: right after the booked ones, not after the line.
    const [urgent] = await repository.reserve([request(store)], 1_000);
    expect(urgent!.booked).toBe(true);
    expect(urgent!.at.getTime() - booked.at(-1)!.at.getTime()).toBe(100);
    expect(urgent!.waitMs).toBeLessThanOrEqual(1_100);

    // A later ordinary call joins the end of the line, although the bucket has room within the horizon soon.
    const [late] = await repository.reserve([ordinary(store)], 1_000);
    expect(late!.estimated).toBe(true);
    expect(late!.at.getTime() - estimated.at(-1)!.at.getTime()).toBe(100);

    // The first of the line comes back with its estimate: it books a real turn, whatever the horizon.
    const [back] = await repository.reserve([request(store)], 1_000);
    expect(back).toMatchObject({ booked: true, estimated: false });
    expect(back!.at.getTime() - urgent!.at.getTime()).toBe(100);
  });

  it('books the urgent calls of a statement first, and the ordinary ones after them up to the horizon', async () => {
    const store = newStore();
    const turns = await repository.reserve([...Array.from({ length: 20 }, () => ordinary(store)), request(store)], 1_000);
    expect(turns[20]).toMatchObject({ booked: true, waitMs: 0 });
    // The urgent call took one of the thirteen turns within the horizon.
    expect(turns.filter((turn) => turn.booked)).toHaveLength(13);
    expect(turns.slice(12, 20).every((turn) => turn.estimated)).toBe(true);
  });

  it('books nothing ordinary past a pause: calls after it wait in line with estimates', async () => {
    const store = newStore();
    const until = await repository.pause(store, 5_000, 100, 3);
    const turns = await repository.reserve([ordinary(store), ordinary(store)], 1_000);
    expect(turns.every((turn) => turn.estimated)).toBe(true);
    expect(turns[0]!.at.getTime()).toBeGreaterThanOrEqual(until.getTime());
    const [urgent] = await repository.reserve([request(store)], 1_000);
    expect(urgent!.at.getTime()).toBe(until.getTime());
  });

  it("gives back what an attempt's other calls booked when one of them is beyond the horizon", async () => {
    // Bursts of 1 at 10 calls a second: every booked call moves the store's next turn by 100 ms.
    const pacer = new SharedPacer(sqlOf(orm), { custom: { perSecond: 10, burst: 2 } });
    const busy = { storeId: newStore(), platform: 'custom' as const };
    const idle = { storeId: newStore(), platform: 'custom' as const };
    const horizon = pacer.horizonMs(busy);
    expect(horizon).toBe(BOOKING_HORIZON_MS);
    // The busy store's horizon is booked full by ordinary attempts.
    const backlog = await attemptTurns(pacer, Array.from({ length: horizon / 100 + 1 }, () => ({ targets: [busy], heldAt: null })));
    expect(backlog.every((turn) => turn.estimate === null)).toBe(true);
    // An attempt calling both stores: the busy one is beyond the horizon, so the attempt gets an estimate and books nothing.
    const [both] = await attemptTurns(pacer, [{ targets: [idle, busy], heldAt: null }]);
    expect(both!.estimate).not.toBeNull();
    expect(both!.estimate!.comeBackAt.getTime()).toBe(both!.estimate!.at.getTime() - horizon / 2);
    // Its turn of the idle store was given back: the idle store's next call goes at once.
    const [next] = await pacer.turns([{ store: idle, lane: 'ordinary' }]);
    expect(next!.waitMs).toBe(0);
    // Urgent and returning attempts book whatever the horizon.
    const [urgent, returning] = await attemptTurns(pacer, [
      { targets: [busy], heldAt: null, urgent: true },
      { targets: [busy], heldAt: null, estimatedAt: both!.estimate!.at },
    ]);
    expect(urgent!.estimate).toBeNull();
    expect(returning!.estimate).toBeNull();
    expect(urgent!.waitMs).toBeLessThanOrEqual(horizon + 100);
  });

  // Known defect, not fixed (fix-3 report): a voided held turn is ordinary again and joins the line's end
  // (a third postponement, out of order). Booking it the store's next real turn instead ('now', the
  // one-line fix) breaks the horizon's bound when a stalled worker voids many turns at once (each
  // books beyond the horizon, and a cancellation waits behind them: flow-control.urgent-lane failed so).
  it.fails('books a real turn for a message whose held turn was voided (too late, or a pause), not a second place at the end of the line', async () => {
    // Bursts of 1 at 10 calls a second.
    const pacer = new SharedPacer(sqlOf(orm), { custom: { perSecond: 10, burst: 2 } });
    const store = { storeId: newStore(), platform: 'custom' as const };
    const horizon = pacer.horizonMs(store);
    // The horizon booked full, and a line of 50 behind it (5 s of the store's calls).
    const sale = await attemptTurns(pacer, Array.from({ length: horizon / 100 + 51 }, () => ({ targets: [store], heldAt: null })));
    const line = sale.filter((turn) => turn.estimate !== null);
    expect(line).toHaveLength(50);
    // A message that already waited its place in the line and booked its turn comes back over a second
    // late (a stalled worker): its turn is void. It books the store's next real turn, within about the
    // horizon, rather than joining the line's end again (a third postponement, behind the 50).
    const [late] = await attemptTurns(pacer, [{ targets: [store], heldAt: new Date(Date.now() - 5_000) }]);
    expect(late!.estimate).toBeNull();
    expect(late!.waitMs).toBeLessThanOrEqual(horizon + 100);
    expect(late!.at!.getTime()).toBeLessThanOrEqual(line[0]!.estimate!.at.getTime());
    // A pause voids a held turn: the message books the first turn after it, not a place in the line.
    await pacer.pause(store, 2_000);
    const [paused] = await attemptTurns(pacer, [{ targets: [store], heldAt: new Date() }]);
    expect(paused!.estimate).toBeNull();
    expect(paused!.at!.getTime()).toBeLessThan(line.at(-1)!.estimate!.at.getTime());
  });
});

describe('the line of a store', () => {
  const ordinary = (storeId: string): TurnRequest => ({ ...request(storeId, null, 1), horizonMs: 1_000 });

  // A member of the line that goes away (its job cancelled, its row retried by hand) gives its place
  // back when its stale message comes back (src/attempts/worker.ts, `leaveLines`): without it, once
  // the others had booked, new ordinary work still waited behind a line of no one, the store idle a
  // spacing per member gone.
  it('gives back the places of members that went away: once the rest have booked, new ordinary work books again', async () => {
    const store = newStore();
    // Bursts of 1 at 10 calls a second, a horizon of 1 s: eleven booked, nine in line.
    const turns = await repository.reserve(Array.from({ length: 20 }, () => ordinary(store)), 1_000);
    expect(turns.filter((turn) => turn.estimated)).toHaveLength(9);
    // Two of the line come back and book; the seven others went away (their messages are stale).
    await repository.reserve([request(store, null, 1), request(store, null, 1)], 1_000);
    await repository.leaveLine(store, 7, 100);
    // Once the booked turns are within the horizon again, a new order's call has no one ahead of it but booked work.
    await new Promise((resolve) => setTimeout(resolve, 800));
    const [next] = await repository.reserve([ordinary(store)], 1_000);
    expect(next).toMatchObject({ booked: true, estimated: false });
  });

  it('keeps the places of members still waiting: new ordinary work waits behind them, not behind those gone', async () => {
    const store = newStore();
    const turns = await repository.reserve(Array.from({ length: 20 }, () => ordinary(store)), 1_000);
    const line = turns.filter((turn) => turn.estimated);
    expect(line).toHaveLength(9);
    // Three of the nine went away; six still wait.
    await repository.leaveLine(store, 3, 100);
    const [next] = await repository.reserve([ordinary(store)], 1_000);
    expect(next).toMatchObject({ booked: false, estimated: true });
    // Its place is the seventh: right behind the six still waiting.
    expect(next!.at.getTime()).toBe(line[6]!.at.getTime());
    // Giving back more places than the line holds empties it, never more: the booked turns stand.
    await repository.leaveLine(store, 100, 100);
    const [after] = await repository.reserve([ordinary(store)], 1_000);
    expect(after!.at.getTime()).toBeGreaterThanOrEqual(turns[10]!.at.getTime());
  });
});

describe('two pacers on one database (two processes)', () => {
  it('share a store: turns reserved through either never overlap', async () => {
    const [a, b] = [new SharedPacer(sqlOf(orm), { custom: { perSecond: 10, burst: 1 } }), new SharedPacer(sqlOf(orm), { custom: { perSecond: 10, burst: 1 } })];
    const store = { storeId: newStore(), platform: 'custom' as const };
    const turns = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).turns([{ store }]).then(([turn]) => turn!.at.getTime())));
    const sorted = [...turns].sort((x, y) => x - y);
    expect(new Set(sorted).size).toBe(10);
    sorted.slice(1).forEach((at, i) => expect(at - sorted[i]!).toBe(100));
  });

  it('share a pause: one pacer told of a 429 holds back the other', async () => {
    const [a, b] = [new SharedPacer(sqlOf(orm)), new SharedPacer(sqlOf(orm))];
    const store = { storeId: newStore(), platform: 'platform_b' as const };
    const pausedAt = Date.now();
    await a.pause(store, 1_500);
    // The other pacer's turn is at the pause's end or later (a recorded turn time, not the wait left).
    const [turn] = await b.turns([{ store }]);
    expect(turn!.at.getTime()).toBeGreaterThanOrEqual(pausedAt + 1_500 - 1);
  });
});
