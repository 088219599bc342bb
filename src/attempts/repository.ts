import { sql, type RawBuilder } from 'kysely';
import type { AttemptTrigger } from '../../contract/enums.ts';
import { insertAuditFrom, type AuditRecord } from '../audit-log/repository.ts';
import type { Orm } from '../db/orm.ts';
import type { Db, Trx } from '../db/sql.ts';
import { PREPARED } from '../db/prepared.ts';
import { StatementShapes, type Slot } from '../db/statement-shapes.ts';
import { newId } from '../shared/ids.ts';
import type { Exchange } from '../platforms/exchange.ts';
import { messageOfRow, settledMessagesStep, settleMessages } from '../queue/repository.ts';
import { insertReadyEventsStep, readyEvents, subscribedToAny, type ReadyEvent } from '../events/repository.ts';
import type { NewEvent } from '../events/types.ts';
import { AttemptEntry, WORKER_LOST } from './entity.ts';
import type { AttemptRow, AttemptTable, AttemptTarget } from './kind.ts';

/**
 * The timeline entry a transition starts (a worker's TAKE) or finishes (its SUCCEED or FAIL, with
 * the excerpt of its last platform call when it made one: src/platforms/exchange.ts).
 */
export type TimelineStep = { trigger: AttemptTrigger } | { outcome: 'succeeded' | 'failed'; platformStatus: number | null; exchange?: Exchange | null };

/** A row's state after a transition, its result column's value, the audit entry written with it, if any, and its timeline step, if any. */
export interface AttemptWrite<R extends AttemptRow = AttemptRow> {
  row: R;
  result: string | null;
  audit?: AuditRecord | undefined;
  timeline?: TimelineStep | undefined;
  /** The kind's `resultDetail` of a successful attempt, written to its column (null: the column is kept). */
  detail?: unknown;
  /**
   * The queue message that delivered the transition, settled by the statement (see `Settlement`):
   * `always`, or only when the write does not apply (`unwritten`: a take that lost its race, whose
   * message is stale; a take that applied keeps its message until the attempt's outcome), or only
   * when it applies (`written`: an outcome carrying its `events`, which a transaction writes again
   * when it does not apply, settling the message then).
   */
  message?: { id: string; settle: 'always' | 'unwritten' | 'written' } | undefined;
  /**
   * The events of the transition, built from the row alone, inserted by the statement itself: only
   * while none of the kind's `eventReads` holds for the row (its events would need what only a read
   * in the transaction finds) and no endpoint is subscribed to them (they would need deliveries and
   * their queue messages). Otherwise the row is not written; the caller writes it again in a
   * transaction that appends its events to the outbox.
   */
  events?: NewEvent[] | undefined;
}

/** The queue messages a transition statement settles (src/queue/repository.ts `settledMessagesStep`): the writes' and `also` (stale ones, settled even when there is no write). */
export interface Settlement {
  queue: string;
  also?: string[];
}


/** The timeline entries of these rows (sync jobs or fulfillments), each row's oldest first. */
export function findAttempts(orm: Orm, rowIds: string[]): Promise<AttemptEntry[]> {
  if (rowIds.length === 0) return Promise.resolve([]);
  return orm.em.fork().find(AttemptEntry, { rowId: { $in: rowIds } }, { orderBy: { rowId: 'asc', attempt: 'asc' } });
}

/**
 * The timeline entries of these rows as the caller's transaction sees them, its own writes
 * included (an outcome just recorded), each row's oldest first: for the events written with it.
 */
export async function findAttemptsIn(trx: Trx, rowIds: string[]): Promise<AttemptEntry[]> {
  if (rowIds.length === 0) return [];
  const rows = await trx.selectFrom('attempts').selectAll().where('row_id', 'in', rowIds).orderBy('row_id').orderBy('attempt').execute();
  // The ORM's driver hands timestamps over as text whatever the declared type says.
  return rows.map((row) => ({
    rowId: row.row_id,
    attempt: row.attempt,
    kind: row.kind,
    ownerId: row.owner_id,
    resellerStoreId: row.reseller_store_id,
    trigger: row.trigger,
    startedAt: new Date(row.started_at),
    finishedAt: row.finished_at === null ? null : new Date(row.finished_at),
    outcome: row.outcome,
    errorMessage: row.error_message,
    platformStatus: row.platform_status,
    result: row.result,
    request: row.request ?? null,
    response: row.response ?? null,
  }) as AttemptEntry);
}

/** A statement to which a named step is added (`with`), its result type not tracked. */
interface WithStep {
  with(name: string, step: () => RawBuilder<unknown>): WithStep;
}

/** One transition as the statement reads it (jsonb_to_recordset). */
interface TransitionValues {
  id: string;
  version: number;
  status: string;
  attempts: number;
  retries_left: number;
  error_message: string | null;
  completed_at: Date | null;
  failed_at: Date | null;
  dead_at: Date | null;
  next_retry_at: Date | null;
  result: string | null;
  queue_message_id: string | null;
  updated_at: Date;
  audit_id: string | null;
  audit_owner_id: string | null;
  audit_reseller_store_id: string | null;
  audit_action: string | null;
  audit_resource_type: string | null;
  audit_resource_id: string | null;
  audit_metadata: unknown;
  audit_actor_id: string | null;
  attempt_trigger: string | null;
  attempt_outcome: string | null;
  platform_status: number | null;
  detail: unknown;
  message_id: string | null;
  message_settle: 'always' | 'unwritten' | 'written' | null;
  events: ReadyEvent[] | null;
  attempt_request: Exchange['request'] | null;
  attempt_response: Exchange['response'] | null;
}

/**
 * The statement every table of retried work shares (used by the sync-jobs and fulfillments
 * repositories): each row's lifecycle columns, written only where the row is still at the version
 * it was read at, with its audit entry if it has one, in one round trip. Returns whether each was
 * written; the rows written have their `version` brought up to date. A transition that lost a race
 * (another worker, a manual retry) is thus a no-op rather than an overwrite.
 *
 * The same statement keeps the attempts' timeline (table `attempts`): a TAKE starts the attempt's
 * entry (`in_progress`); a `recovered` TAKE also closes the entry a lost worker left open, as
 * failed; an outcome finishes the entry with the platform's HTTP status and the result.
 *
 * The kind's `onSettled` steps (handed to it by the composition root) are parts of the same
 * statement, reading `settled`: the rows it moved to `dead` or `completed`.
 */
export async function writeAttemptTransitions<R extends AttemptRow>(
  db: Db | Trx,
  target: AttemptTarget,
  writes: AttemptWrite<R>[],
  settlement?: Settlement,
): Promise<boolean[]> {
  if (writes.length === 0) {
    if (settlement?.also?.length) await settleMessages(db, settlement.queue, settlement.also);
    return [];
  }
  const now = new Date();
  const values: TransitionValues[] = writes.map(({ row, result, audit, timeline, detail, message, events }) => ({
    id: row.id,
    version: row.version,
    status: row.status,
    attempts: row.attempts,
    retries_left: row.retriesLeft,
    error_message: row.errorMessage ?? null,
    completed_at: row.completedAt ?? null,
    failed_at: row.failedAt ?? null,
    dead_at: row.deadAt ?? null,
    // Only a failed row waits for an automatic retry; any other transition clears the time.
    next_retry_at: row.status === 'failed' ? (row.nextRetryAt ?? null) : null,
    result,
    queue_message_id: row.queueMessageId ?? null,
    updated_at: row.updatedAt,
    audit_id: audit ? newId('auditEntry') : null,
    audit_owner_id: audit?.ownerId ?? null,
    audit_reseller_store_id: audit?.resellerStoreId ?? null,
    audit_action: audit?.action ?? null,
    audit_resource_type: audit?.resourceType ?? null,
    audit_resource_id: audit?.resourceId ?? null,
    audit_metadata: audit ? (audit.metadata ?? {}) : null,
    audit_actor_id: audit?.actorId ?? null,
    attempt_trigger: timeline && 'trigger' in timeline ? timeline.trigger : null,
    attempt_outcome: timeline && 'outcome' in timeline ? timeline.outcome : null,
    platform_status: timeline && 'outcome' in timeline ? timeline.platformStatus : null,
    detail: detail ?? null,
    attempt_request: timeline && 'outcome' in timeline ? (timeline.exchange?.request ?? null) : null,
    attempt_response: timeline && 'outcome' in timeline ? (timeline.exchange?.response ?? null) : null,
    message_id: message?.id ?? null,
    message_settle: message?.settle ?? null,
    events: events ? readyEvents(events, now) : null,
  }));
  const withEvents = values.some((v) => v.events !== null);
  const shape = `${withEvents ? 'events' : 'plain'}|${settlement?.queue ?? ''}`;
  const rows = await shapesOf(target).rows(
    db,
    shape,
    ([json, also]) => transitionStatement(db, target, withEvents, settlement && { queue: settlement.queue, also }, json),
    [JSON.stringify(values), settlement?.also ?? []],
  );
  return writes.map(({ row }) => {
    const written = rows.find((w) => w.id === row.id && w.read_version === row.version);
    if (written) row.version = written.version;
    return written !== undefined;
  });
}

/** The statements of each kind's transitions, one per shape (with or without events, the queue settled): built once per process. */
const shapes = new WeakMap<AttemptTarget, StatementShapes>();

function shapesOf(target: AttemptTarget): StatementShapes {
  let kindShapes = shapes.get(target);
  if (kindShapes === undefined) shapes.set(target, (kindShapes = new StatementShapes()));
  return kindShapes;
}

/**
 * The transition statement of `target` (see `writeAttemptTransitions`), for rows with events or
 * without, settling messages of `settlement.queue` or none; `json` (the rows) and `settlement.also`
 * are slots, so the statement is built once per shape.
 */
function transitionStatement(
  db: Db | Trx,
  { name: kind, table, resultColumn, resultDetail, onSettled = [], eventReads = [] }: AttemptTarget,
  withEvents: boolean,
  settlement: { queue: string; also: Slot } | undefined,
  json: Slot,
) {
  // A row carrying its events is written only when they are complete and need no deliveries (see `AttemptWrite.events`).
  const eventsGuard = withEvents ? sql` and (v.events is null or not (${sql.join([subscribedToAny(sql`v.events`), ...eventReads], sql` or `)}))` : sql``;
  const detailSet = resultDetail ? sql`, ${sql.ref(resultDetail.column)} = coalesce(v.detail, ${sql.ref(`t.${resultDetail.column}`)})` : sql``;
  const statement = db
    .with(
      'v',
      () => sql<TransitionValues>`(
        select * from jsonb_to_recordset(${json}::jsonb) as v(
          id text, version int, status text, attempts int, retries_left int, error_message text, completed_at timestamptz,
          failed_at timestamptz, dead_at timestamptz, next_retry_at timestamptz, result text, queue_message_id text, updated_at timestamptz,
          audit_id text, audit_owner_id text, audit_reseller_store_id text, audit_action text, audit_resource_type text,
          audit_resource_id text, audit_metadata jsonb, audit_actor_id text, attempt_trigger text, attempt_outcome text,
          platform_status int, attempt_request jsonb, attempt_response jsonb, detail jsonb, message_id text, message_settle text, events jsonb))`,
    )
    .with(
      'written',
      () => sql<{ id: string; read_version: number; version: number; owner_id: string; reseller_store_id: string }>`(
        update ${sql.table(table)} as t set
          status = v.status, attempts = v.attempts, retries_left = v.retries_left, error_message = v.error_message,
          completed_at = v.completed_at, failed_at = v.failed_at, dead_at = v.dead_at, next_retry_at = v.next_retry_at, ${sql.ref(resultColumn)} = v.result,
          queue_message_id = v.queue_message_id, updated_at = v.updated_at, version = t.version + 1${detailSet}
        from v where t.id = v.id and t.version = v.version${eventsGuard}
        returning t.id, v.version as read_version, t.version, t.owner_id, t.reseller_store_id)`,
    )
    .with('audited', (db) =>
      insertAuditFrom(
        db,
        db
          .selectFrom('written')
          .innerJoin('v', 'v.id', 'written.id')
          .where('v.audit_id', 'is not', null)
          .select([
            sql<string>`v.audit_id`.as('id'),
            sql<string>`v.audit_owner_id`.as('owner_id'),
            sql<string>`v.audit_reseller_store_id`.as('reseller_store_id'),
            sql<string>`v.audit_action`.as('action'),
            sql<string>`v.audit_resource_type`.as('resource_type'),
            sql<string>`v.audit_resource_id`.as('resource_id'),
            sql<unknown>`v.audit_metadata`.as('metadata'),
            sql<string>`v.audit_actor_id`.as('actor_id'),
            sql<Date>`v.updated_at`.as('created_at'),
          ]),
      ),
    )
    .with('attempt_started', (db) =>
      db
        .insertInto('attempts')
        .columns(['row_id', 'attempt', 'kind', 'owner_id', 'reseller_store_id', 'trigger', 'started_at', 'outcome'])
        .expression(
          db
            .selectFrom('written as w')
            .innerJoin('v', 'v.id', 'w.id')
            .where('v.attempt_trigger', 'is not', null)
            .select((eb) => [
              'w.id as row_id',
              'v.attempts as attempt',
              eb.val(kind).as('kind'),
              'w.owner_id',
              'w.reseller_store_id',
              sql<string>`v.attempt_trigger`.as('trigger'),
              'v.updated_at as started_at',
              eb.val('in_progress').as('outcome'),
            ]),
        )
        .onConflict((oc) => oc.columns(['row_id', 'attempt']).doNothing()),
    )
    .with('attempt_lost', (db) =>
      db
        .updateTable('attempts as a')
        .from('written as w')
        .innerJoin('v', 'v.id', 'w.id')
        .set((eb) => ({ finished_at: eb.ref('v.updated_at'), outcome: 'failed', error_message: WORKER_LOST }))
        .whereRef('a.row_id', '=', 'w.id')
        .whereRef('a.attempt', '<', 'v.attempts')
        .where('v.attempt_trigger', '=', 'recovered')
        .where('a.outcome', '=', 'in_progress'),
    )
    .with('attempt_finished', (db) =>
      db
        .updateTable('attempts as a')
        .from('written as w')
        .innerJoin('v', 'v.id', 'w.id')
        .set((eb) => ({
          finished_at: eb.ref('v.updated_at'),
          outcome: sql<string>`v.attempt_outcome`,
          error_message: eb.ref('v.error_message'),
          platform_status: eb.ref('v.platform_status'),
          result: eb.ref('v.result'),
          request: sql<string>`v.attempt_request`,
          response: sql<string>`v.attempt_response`,
        }))
        .whereRef('a.row_id', '=', 'w.id')
        .whereRef('a.attempt', '=', 'v.attempts')
        .where('v.attempt_outcome', 'is not', null)
        .where('a.outcome', '=', 'in_progress'),
    )
    .with(
      'settled',
      () => sql<{ id: string; owner_id: string; reseller_store_id: string; status: string; error_message: string | null; result: string | null; updated_at: Date }>`(
        select w.id, w.owner_id, w.reseller_store_id, v.status, v.error_message, v.result, v.updated_at
        from written w join v on v.id = w.id
        where v.status in ('dead', 'completed'))`,
    );
  // What other features write when rows settle (the kind's `onSettled`, handed in by the composition
  // root): more steps of this statement, so they commit with the transition.
  // Each step gets a name of its own; nothing reads its output, so the query's type does not track it.
  let withSteps = statement;
  if (settlement) {
    const ids = sql`array(
      select v.message_id::uuid from v where v.message_settle = 'always'
      union all select v.message_id::uuid from v where v.message_settle = 'unwritten' and not exists (select 1 from written w where w.id = v.id)
      union all select v.message_id::uuid from v join written w on w.id = v.id where v.message_settle = 'written'
      union all select unnest(${settlement.also}::uuid[]))`;
    withSteps = (withSteps as unknown as WithStep).with('settled_messages', () => settledMessagesStep(settlement.queue, ids)) as unknown as typeof statement;
  }
  if (withEvents) {
    const written = sql`select v.events from written w join v on v.id = w.id where v.events is not null`;
    withSteps = (withSteps as unknown as WithStep).with('ready_events', () => insertReadyEventsStep(written)) as unknown as typeof statement;
  }
  for (const [i, step] of onSettled.entries()) {
    withSteps = (withSteps as unknown as WithStep).with(`settled_step_${i}`, () => step) as unknown as typeof statement;
  }
  return withSteps.selectFrom('written').select(['id', 'read_version', 'version']).modifyEnd(PREPARED);
}

/** A row the sweep found without a live queue message, and what became of that message. */
export interface StrandedRow {
  id: string;
  version: number;
  /** pg-boss's state of the row's message (`completed`, `failed`, `cancelled`), or null when it has none or it is gone. */
  messageState: string | null;
}

/** The message states in which pg-boss will still deliver a message (or is delivering it). */
const LIVE_MESSAGE_STATES = ['created', 'retry', 'active'];

/**
 * Unfinished rows (pending, processing, failed) of a table, untouched since `staleBefore` and, when
 * failed, whose retry was due by then, whose queue message is not live: it completed or failed
 * without moving the row, or it is gone. Oldest first. A failed row waiting for a later retry is not
 * read (its message, if lost, is replaced once the retry is due, not before). Reads the partial index
 * on unfinished rows by `greatest(updated_at, next_retry_at)`, and pg-boss's job table by primary key.
 */
export async function findStranded(db: Db | Trx, table: AttemptTable, queueName: string, staleBefore: Date, limit: number): Promise<StrandedRow[]> {
  const { rows } = await sql<{ id: string; version: number; message_state: string | null }>`
    select t.id, t.version, m.state::text as message_state
    from ${sql.table(table)} t
    left join pgboss.job m on ${messageOfRow('m', queueName, 't.queue_message_id')}
    where t.status in ('pending', 'processing', 'failed') and greatest(t.updated_at, t.next_retry_at) < ${staleBefore}
      and (m.id is null or m.state::text <> all(${LIVE_MESSAGE_STATES}::text[]))
    order by greatest(t.updated_at, t.next_retry_at)
    limit ${limit}
  `.execute(db);
  return rows.map((row) => ({ id: row.id, version: row.version, messageState: row.message_state }));
}

/** A row's queue message replaced by a later one: `messageId` was read with the row, at `version`. */
export interface MessageReplacement {
  id: string;
  version: number;
  messageId: string | null;
  nextMessageId: string;
  /** When the next message starts, if later than planned: a failed row's `next_retry_at` follows it. */
  startsAt?: Date | undefined;
}

/**
 * Hands rows over to new queue messages without any other change (a postponement: the lifecycle
 * columns stay as they are, no attempt is spent). Like a transition, each write applies only while
 * the row is at the version, and still names the message, that were read; returns which applied.
 */
export async function replaceQueueMessages(db: Db | Trx, table: AttemptTable, replacements: MessageReplacement[]): Promise<boolean[]> {
  if (replacements.length === 0) return [];
  const rows = await db
    .with(
      'v',
      () => sql<{ id: string; version: number; message_id: string | null; next_message_id: string; starts_at: Date | null }>`(
        select * from jsonb_to_recordset(${JSON.stringify(
          replacements.map((r) => ({ id: r.id, version: r.version, message_id: r.messageId, next_message_id: r.nextMessageId, starts_at: r.startsAt ?? null })),
        )}::jsonb) as v(id text, version int, message_id text, next_message_id text, starts_at timestamptz))`,
    )
    .with(
      'replaced',
      () => sql<{ id: string }>`(
        update ${sql.table(table)} as t set queue_message_id = v.next_message_id, version = t.version + 1,
          next_retry_at = case when t.status = 'failed' and v.starts_at is not null then v.starts_at else t.next_retry_at end
        from v where t.id = v.id and t.version = v.version and t.queue_message_id is not distinct from v.message_id
        returning t.id)`,
    )
    .selectFrom('replaced')
    .select('id')
    .execute();
  const replaced = new Set(rows.map((row) => row.id));
  return replacements.map((r) => replaced.has(r.id));
}
