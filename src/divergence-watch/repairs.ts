/**
 * What the watch does about the cancellations it finds, behind a small port (`WatchRepairs`), filled
 * by the composition root (src/services.ts) with what their webhooks do: the cancellation feature's
 * `recordSupplierCancellation` and the order module's storefront `cancel`. The watch calls the port
 * outside any transaction of its own, once per order and pass (a later pass may call it again for
 * the same order: each method must be idempotent and say whether it recorded anything new).
 */
import type { CancelledBefore } from '../orders/types.ts';
import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';

export interface SupplierCancellationFound {
  /** The supplier's order id as listed: the job's `sourceOrderId`, or the order in doubt its reference names. */
  sourceOrderId: string;
  /** The platform's reason (platform_a `cancel_reason`, platform_b's status), if it gives one. */
  reason: string | null;
  /** When the supplier's list shows the order last changed. */
  listedAt: Date;
  watchPassId: string;
}

export interface WatchRepairs {
  /**
   * A supplier order the service placed is listed cancelled: record it as the supplier's own
   * cancellation webhook would, on `job` (the job that recorded the order, or the one whose reference
   * an order in doubt carries). Returns whether anything new was recorded (a repair).
   */
  supplierCancelled(job: SyncJob, found: SupplierCancellationFound): Promise<boolean>;
  /**
   * A supplier order the service placed is listed open, showing some of its lines cancelled
   * (`shown`: per supplier SKU, the quantity cancelled): what it shows beyond what the service asked
   * of the job is recorded as the supplier's own cancellation of those lines, as its webhook would be.
   * Returns whether anything new was recorded (a repair).
   */
  supplierLinesCancelled(job: SyncJob, found: Omit<SupplierCancellationFound, 'reason'> & { shown: { sku: string; quantity: number }[] }): Promise<boolean>;
  /**
   * A routed storefront order is listed cancelled: treat it as its orders/cancelled webhook.
   * Returns whether anything new was recorded (a repair).
   */
  storefrontCancelled(store: ResellerStore, externalOrderId: string, watchPassId: string): Promise<boolean>;
  /**
   * A routed storefront order, not cancelled whole, is listed showing some of its lines cancelled
   * (`cancelled`, as of the order's time): what it shows beyond what the service recorded for the
   * order (a partial cancellation whose webhook was lost) is recorded and cancelled at the suppliers
   * as that webhook would have (the cancellation feature's `cancelShownLines`). Returns whether a
   * cancellation was asked for (a repair).
   */
  storefrontLinesCancelled(store: ResellerStore, shown: { externalOrderId: string; cancelled: CancelledBefore }, watchPassId: string): Promise<boolean>;
  /**
   * A supplier order listed still open (not shipped, not cancelled) whose reference names `job`, a job
   * ended unplaced whose whole-order cancellation ended `not_placed` (its lookup missed this order):
   * record the order on the job and have it cancelled at the supplier, as the storefront's
   * cancellation asked (the cancellation feature's `cancelFoundOrder`). Returns whether a cancellation
   * was asked for (a repair).
   */
  unplacedOrderOpen(job: SyncJob, found: { sourceOrderId: string; watchPassId: string }): Promise<boolean>;
  /**
   * A supplier order listed whose reference names `job`, a job ended unplaced whose whole-order
   * cancellation has not found the order (still looking, or dead): record the order on the job and,
   * when that cancellation is dead, re-open it so its retries cancel the order (the cancellation
   * feature's `recordFoundOrderOfVoided`). Returns whether the order was recorded now, and whether a
   * dead cancellation was re-opened (a repair).
   */
  voidedOrderFound(job: SyncJob, found: { sourceOrderId: string; watchPassId: string }): Promise<{ recorded: boolean; reopened: boolean }>;
}
