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
}

/** When a call may be made, by the database's clock, and how long that is from now. */
export interface Turn {
  at: Date;
  waitMs: number;
}

/** Times as epoch milliseconds: the ORM's driver reads timestamptz as text. */
interface TurnRow {
  i: number;
  turn_ms: number | string;
  wait_ms: number | string;
}

/** Every statement on store_pacing. */
export class PacingRepository {
  constructor(private readonly db: Db) {}

  /**
   * Reserves a turn for every request in one statement. Each store's row is a GCRA token bucket:
   * `next_at` is when it would next be full, each call pushes it `spacing` further, and a call may go
   * once `next_at - spacing × burst` has passed (so `burst` calls go at once from full, then one per
   * `spacing`). Requests for one store in one statement get consecutive turns, in request order.
   * The clock is PostgreSQL's, read once, so processes on different hosts agree on turns.
   */
  async reserve(requests: TurnRequest[], lateToleranceMs: number): Promise<Turn[]> {
    if (requests.length === 0) return [];
    const values = requests.map((request, i) => ({
      i,
      store_id: request.storeId,
      spacing_ms: request.spacingMs,
      burst: request.burst,
      held_at: request.heldAt?.toISOString() ?? null,
    }));
    const { rows } = await sql<TurnRow>`
      with clock as materialized (select clock_timestamp() as t),
      req as (
        select * from jsonb_to_recordset(${JSON.stringify(values)}::jsonb)
          as r(i int, store_id text, spacing_ms float8, burst int, held_at timestamptz)
      ),
      judged as (
        select r.*, coalesce(
            r.held_at >= c.t - ${lateToleranceMs} * interval '1 millisecond'
            and (p.paused_until is null or p.paused_until <= r.held_at), false) as holds
        from req r cross join clock c left join store_pacing p on p.store_id = r.store_id
      ),
      fresh as (
        select i, store_id, spacing_ms, burst,
               row_number() over (partition by store_id order by i) as n,
               count(*) over (partition by store_id) as calls
        from judged where not holds
      ),
      charged as (
        insert into store_pacing as p (store_id, next_at)
        select distinct on (f.store_id) f.store_id, c.t + f.calls * f.spacing_ms * interval '1 millisecond'
        from fresh f cross join clock c
        on conflict (store_id) do update
          set next_at = greatest(p.next_at, (select t from clock)) + (excluded.next_at - (select t from clock))
        returning p.store_id, p.next_at
      )
      , turns as (
        select j.i, c.t,
          case when j.holds then greatest(j.held_at, c.t)
               else greatest(c.t, ch.next_at - ((f.calls - f.n + 1) + (f.burst - 1)) * f.spacing_ms * interval '1 millisecond')
          end as turn_at
        from judged j cross join clock c
          left join fresh f on f.i = j.i
          left join charged ch on ch.store_id = j.store_id
      )
      select i, extract(epoch from turn_at) * 1000 as turn_ms, extract(epoch from turn_at - t) * 1000 as wait_ms
      from turns order by i ${PREPARED}`.execute(this.db);
    return rows.map((row) => ({ at: new Date(Number(row.turn_ms)), waitMs: Math.max(0, Number(row.wait_ms)) }));
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
