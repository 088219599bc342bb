import { sql } from 'kysely';
import type { Db } from '../db/sql.ts';
import { PREPARED } from '../db/prepared.ts';

/** One call someone wants to make to a store. */
export interface TurnRequest {
  storeId: string;
  /** Milliseconds between calls at the store's steady rate (1000 / perSecond). */
  spacingMs: number;
  burst: number;
  /**
   * A turn the caller reserved earlier (its queue message was postponed to it). It stands, costing
   * nothing more, unless it is over `lateToleranceMs` late or a pause now covers it; then the caller
   * gets a fresh turn like everyone else.
   */
  heldAt: Date | null;
  /**
   * How far ahead of now an ordinary call may book a fresh turn (the booking horizon). Beyond it, or
   * while the store's waiting line is not empty, it books nothing: it gets an estimate of its turn, its
   * place at the end of the line. Absent or null: the call books the store's next turn however far
   * away it is (an urgent attempt, a call waiting inline, a call that carries its estimate back).
   */
  horizonMs?: number | null;
}

/** When a call may be made, by the database's clock, and how long that is from now. */
export interface Turn {
  at: Date;
  waitMs: number;
  /** True when this reservation charged the store's bucket for the turn (not a held turn, not an estimate). */
  booked: boolean;
  /** Nothing was booked: `at` is only the estimate of the call's turn, its place in the store's waiting line. */
  estimated: boolean;
}

/** Times as epoch milliseconds: the ORM's driver reads timestamptz as text. */
interface TurnRow {
  i: number;
  turn_ms: number | string;
  wait_ms: number | string;
  booked: boolean;
  estimated: boolean;
}

/** Every statement on store_pacing. */
export class PacingRepository {
  constructor(private readonly db: Db) {}

  /**
   * Reserves a turn for every request in one statement. Each store's row is a GCRA token bucket:
   * `next_at` is when it would next be full, each call pushes it `spacing` further, and a call may go
   * once `next_at - spacing × burst` has passed (so `burst` calls go at once from full, then one per
   * `spacing`). Requests for one store in one statement get consecutive turns: first those that book
   * whatever (no horizon), then the ordinary ones, each in request order.
   *
   * An ordinary request (`horizonMs`) books only a turn at most `horizonMs` from now, and only while
   * no line waits; the others book nothing and join the line: `queued_until`, a second GCRA time,
   * is where it ends (each pushes it `spacing` further, from `next_at` at the least), and each is told
   * its place in it as the turn it would get (an estimate). The line is FIFO: its requests come back
   * with their estimates and book whatever the horizon, so nothing ordinary is ever booked more than
   * the horizon ahead, and a request that books whatever waits at most about the horizon behind any
   * backlog. With no backlog nothing of this costs more: the same one statement.
   *
   * The stores' rows are locked first (in key order, so two statements never wait on each other in
   * a cycle) and read as they stand after any statement that held them, so the horizon is judged on
   * the turns booked so far. The clock is PostgreSQL's, read once, so processes on different hosts
   * agree on turns.
   */
  async reserve(requests: TurnRequest[], lateToleranceMs: number): Promise<Turn[]> {
    if (requests.length === 0) return [];
    const values = requests.map((request, i) => ({
      i,
      store_id: request.storeId,
      spacing_ms: request.spacingMs,
      burst: request.burst,
      held_at: request.heldAt?.toISOString() ?? null,
      horizon_ms: request.horizonMs ?? null,
    }));
    const { rows } = await sql<TurnRow>`
      with clock as materialized (select clock_timestamp() as t),
      req as (
        select * from jsonb_to_recordset(${JSON.stringify(values)}::jsonb)
          as r(i int, store_id text, spacing_ms float8, burst int, held_at timestamptz, horizon_ms float8)
      ),
      bucket as materialized (
        select p.store_id, p.next_at, p.paused_until, p.queued_until from store_pacing p
        where p.store_id in (select store_id from req) order by p.store_id for update
      ),
      judged as (
        select r.*, coalesce(
            r.held_at >= c.t - ${lateToleranceMs} * interval '1 millisecond'
            and (b.paused_until is null or b.paused_until <= r.held_at), false) as holds
        from req r cross join clock c left join bucket b on b.store_id = r.store_id
      ),
      ranked as (
        select j.i, j.store_id, j.spacing_ms, j.burst, j.horizon_ms is null as must,
               row_number() over (partition by j.store_id, j.horizon_ms is null order by j.i) as r,
               count(*) filter (where j.horizon_ms is null) over (partition by j.store_id) as m,
               count(*) filter (where j.horizon_ms is not null) over (partition by j.store_id) as o,
               max(j.horizon_ms) over (partition by j.store_id) as horizon_ms,
               greatest(b.next_at, c.t) as base, b.queued_until, c.t
        from judged j cross join clock c left join bucket b on b.store_id = j.store_id
        where not j.holds
      ),
      allowed as (
        select k.*, case
            when k.o = 0 then 0
            when k.queued_until > k.base + k.m * k.spacing_ms * interval '1 millisecond' then 0
            else least(k.o, greatest(0, floor((k.horizon_ms - extract(epoch from k.base - k.t) * 1000) / k.spacing_ms) + k.burst - k.m))
          end as allowed
        from ranked k
      ),
      fresh as (
        select a.i, a.store_id, a.spacing_ms, a.burst,
               a.must or a.r <= a.allowed as books,
               case when a.must then a.r else a.m + a.r end as n,
               a.r - a.allowed as q,
               a.m + a.allowed as calls,
               a.o - a.allowed as queued
        from allowed a
      ),
      charged as (
        insert into store_pacing as p (store_id, next_at, queued_until)
        select distinct on (f.store_id) f.store_id, c.t + f.calls * f.spacing_ms * interval '1 millisecond',
               case when f.queued > 0 then c.t + (f.calls + f.queued) * f.spacing_ms * interval '1 millisecond' end
        from fresh f cross join clock c
        on conflict (store_id) do update
          set next_at = greatest(p.next_at, (select t from clock)) + (excluded.next_at - (select t from clock)),
              queued_until = case when excluded.queued_until is null then p.queued_until
                else greatest(p.queued_until, greatest(p.next_at, (select t from clock)) + (excluded.next_at - (select t from clock)))
                     + (excluded.queued_until - excluded.next_at) end
        returning p.store_id, p.next_at, p.queued_until
      )
      , turns as (
        select j.i, c.t, coalesce(f.books, false) as booked, coalesce(not f.books, false) as estimated,
          case when j.holds then greatest(j.held_at, c.t)
               when f.books then greatest(c.t, ch.next_at - ((f.calls - f.n + 1) + (f.burst - 1)) * f.spacing_ms * interval '1 millisecond')
               else greatest(c.t, ch.queued_until - ((f.queued - f.q + 1) + (f.burst - 1)) * f.spacing_ms * interval '1 millisecond')
          end as turn_at
        from judged j cross join clock c
          left join fresh f on f.i = j.i
          left join charged ch on ch.store_id = j.store_id
      )
      select i, extract(epoch from turn_at) * 1000 as turn_ms, extract(epoch from turn_at - t) * 1000 as wait_ms, booked, estimated
      from turns order by i ${PREPARED}`.execute(this.db);
    return rows.map((row) => ({ at: new Date(Number(row.turn_ms)), waitMs: Math.max(0, Number(row.wait_ms)), booked: row.booked, estimated: row.estimated }));
  }

  /**
   * Gives back `calls` turns reserved but not used (the attempt that held them failed first): the
   * bucket's `next_at` moves back by as many spacings, never before now. Not while a pause is in
   * force: the pause voided every turn reserved before it, so nothing is left to give back, and
   * moving `next_at` back would let calls in before the pause ends.
   */
  async release(storeId: string, calls: number, spacingMs: number): Promise<void> {
    await sql`
      update store_pacing
         set next_at = greatest(clock_timestamp(), next_at - ${calls * spacingMs} * interval '1 millisecond')
       where store_id = ${storeId} and (paused_until is null or paused_until <= clock_timestamp())`.execute(this.db);
  }

  /**
   * Gives back `places` places in the store's waiting line (`queued_until`) that no one will come
   * back for (their messages went stale: the row was retried by hand, cancelled, or finished
   * meanwhile): the line's end moves back as many spacings, never before the booked turns (`next_at`)
   * nor now. Without it the store's new ordinary work waits behind a line of no one, the store idle a
   * spacing per member gone. Turns themselves are untouched: the rate is `next_at`'s to keep.
   */
  async leaveLine(storeId: string, places: number, spacingMs: number): Promise<void> {
    await sql`
      update store_pacing
         set queued_until = greatest(next_at, clock_timestamp(), queued_until - ${places * spacingMs} * interval '1 millisecond')
       where store_id = ${storeId} and queued_until is not null`.execute(this.db);
  }

  /**
   * Pauses a store for `pauseMs` (a 429's Retry-After): no turn starts before then, and after it
   * the bucket resumes empty, one call then one per `spacing`. A longer pause already set stands.
   */
  async pause(storeId: string, pauseMs: number, spacingMs: number, burst: number): Promise<Date> {
    const refillMs = (burst - 1) * spacingMs;
    const { rows } = await sql<{ paused_until: number | string }>`
      with clock as materialized (select clock_timestamp() as t)
      insert into store_pacing as p (store_id, next_at, paused_until)
      select ${storeId}, c.t + ${pauseMs + refillMs} * interval '1 millisecond', c.t + ${pauseMs} * interval '1 millisecond'
      from clock c
      on conflict (store_id) do update
        set paused_until = greatest(p.paused_until, excluded.paused_until), next_at = greatest(p.next_at, excluded.next_at)
      returning extract(epoch from p.paused_until) * 1000 as paused_until`.execute(this.db);
    return new Date(Number(rows[0]!.paused_until));
  }
}
