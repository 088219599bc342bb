import { sql } from 'kysely';
import type { Orm } from '../db/orm.ts';
import { PREPARED } from '../db/prepared.ts';
import { StatementShapes, type Slot } from '../db/statement-shapes.ts';
import { sqlOf, type Trx } from '../db/sql.ts';
import type { RoutingSource } from './entity.ts';

export interface OrderKey {
  resellerStoreId: string;
  externalOrderId: string;
}

const keyOf = (order: OrderKey) => `${order.resellerStoreId}\u0000${order.externalOrderId}`;

/**
 * The routing's insert of its orders (a JSON array in a slot, whatever their number, so its text is
 * fixed and prepared, src/db/prepared.ts), in the order given; returns the orders it inserted.
 */
function recordStatement(trx: Trx, rows: Slot, at: Slot) {
  return trx
    // (A raw CTE body is not parenthesised by Kysely, hence the parentheses.)
    .with('r', () => sql<{ reseller_store_id: string; external_order_id: string; source: string }>`(
      select * from jsonb_to_recordset(${rows}::jsonb) as r(reseller_store_id text, external_order_id text, source text))`)
    .insertInto('routed_orders')
    .columns(['reseller_store_id', 'external_order_id', 'source', 'routed_at'])
    .expression((eb) => eb.selectFrom('r').select(['reseller_store_id', 'external_order_id', 'source', eb.val(at.typed<Date>()).as('routed_at')]))
    .onConflict((oc) => oc.doNothing())
    .returning(['reseller_store_id', 'external_order_id'])
    .modifyEnd(PREPARED);
}

/** Statements on routed_orders: which reseller orders were routed, and by what first. */
export class RoutedOrderRepository {
  /** `recordIn`'s statement, built once (src/db/statement-shapes.ts). */
  readonly #statements = new StatementShapes();

  constructor(private readonly orm: Orm) {}

  /**
   * Records these orders as routed, in the routing transaction, and tells for each whether this was
   * the first routing. The primary key decides: a concurrent routing of the same order waits for
   * this one to commit and then finds it routed. An order asked twice counts as first only once.
   */
  async recordIn(trx: Trx, orders: (OrderKey & { source: RoutingSource })[], at: Date): Promise<boolean[]> {
    if (orders.length === 0) return [];
    // Sorted, so two transactions recording the same orders take their index entries in one order (no deadlock).
    const rows = [...orders]
      .sort((a, b) => a.resellerStoreId.localeCompare(b.resellerStoreId) || a.externalOrderId.localeCompare(b.externalOrderId))
      .map((order) => ({ reseller_store_id: order.resellerStoreId, external_order_id: order.externalOrderId, source: order.source }));
    const inserted = await this.#statements.rows(trx, 'record', ([json, at]) => recordStatement(trx, json, at), [JSON.stringify(rows), at]);
    const firsts = new Set(inserted.map((row) => keyOf({ resellerStoreId: row.reseller_store_id, externalOrderId: row.external_order_id })));
    return orders.map((order) => firsts.delete(keyOf(order)));
  }

  /** The routing transaction: every statement of one group of orders commits together. */
  transaction<T>(work: (trx: Trx) => Promise<T>): Promise<T> {
    return sqlOf(this.orm).transaction().execute(work);
  }

  /** Which of these orders of one store were routed already: a read, so skipping them writes nothing. */
  async routedAmong(resellerStoreId: string, externalOrderIds: string[]): Promise<Set<string>> {
    if (externalOrderIds.length === 0) return new Set();
    const rows = await sqlOf(this.orm)
      .selectFrom('routed_orders')
      .select('external_order_id')
      .where('reseller_store_id', '=', resellerStoreId)
      .where('external_order_id', 'in', externalOrderIds)
      .execute();
    return new Set(rows.map((row) => row.external_order_id));
  }
}
