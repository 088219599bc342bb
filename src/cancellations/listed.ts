/**
 * What a storefront order showed cancelled of its lines, as the service read it: when it was routed
 * (a custom order's lines' `cancelledQuantity`, a platform_a line's refund-cancelled quantity, read by
 * reconciliation's list or a late orders/create), routing records them as one signal of the order
 * (`listed:`, src/cancellations/signal-keys.ts), cut from its jobs before any placement; when the
 * divergence watch later lists the routed order showing more cancelled than the order's signals
 * account for, it records the difference as a signal (`shown:`) and applies it. Each of these is a
 * *snapshot*: the storefront's own count, as of the order's time. The partial cancellations behind
 * those quantities may have their own webhooks, lost or late or early: each one that a snapshot
 * already counts is recorded and audited but not applied again. Order-changes.md: repeated or
 * overlapping requests never cancel more than was ordered.
 */
import type { OrderCancellation } from './entity.ts';
import { isListedSignal, isShownSignal } from './signal-keys.ts';

const timeOf = (at: Date | string) => new Date(at).getTime();

/** Whether a signal is a snapshot of what the storefront order showed cancelled (`listed:` or `shown:`). */
export const isSnapshotSignal = (signal: Pick<OrderCancellation, 'dedupeKey'>): boolean => isListedSignal(signal.dedupeKey) || isShownSignal(signal.dedupeKey);

const bySku = (lines: { sku: string; quantity: number }[]) => {
  const sums = new Map<string, number>();
  for (const line of lines) sums.set(line.sku, (sums.get(line.sku) ?? 0) + line.quantity);
  return sums;
};

/**
 * Of an order's signals (any orders', oldest first), those a snapshot already holds, each with that
 * snapshot. A lines signal is held by a snapshot that counts it, the listed one first, then the
 * watch's in the order they were recorded, when its quantities fit in what the snapshot has left
 * once the older signals it holds took theirs (by SKU):
 * - the listed snapshot counts any signal made no later than the order it read (whenever the signal
 *   arrived: before routing, or late);
 * - a watch snapshot counts only signals recorded after it (those recorded before were among what it
 *   found the order's signals account for) made no later than the order it listed;
 * - a signal without a time the platform gave is compared by its quantities alone: held when it fits
 *   (its webhook late, for quantities a snapshot already cancelled). Had it been a new cancellation
 *   after all, the storefront order now shows more cancelled than the signals account for, and the
 *   watch's next pass records and cancels the difference (`unaccountedLines`): a quantity cancelled a
 *   few minutes late, rather than cut twice (a customer short of goods they paid for).
 * Otherwise (made later than every snapshot that has room) it is applied.
 */
export function heldBySnapshot(signals: OrderCancellation[]): Map<string, OrderCancellation> {
  const held = new Map<string, OrderCancellation>();
  const byOrder = new Map<string, OrderCancellation[]>();
  for (const signal of signals) {
    const key = `${signal.resellerStoreId}\n${signal.externalOrderId}`;
    byOrder.set(key, [...(byOrder.get(key) ?? []), signal]);
  }
  for (const ofOrder of byOrder.values()) {
    const snapshots = ofOrder
      .map((signal, index) => ({ signal, index }))
      .filter(({ signal }) => isSnapshotSignal(signal) && signal.occurredAt !== null && signal.occurredAt !== undefined)
      // The listed one first (the order as routed), then the watch's, oldest first.
      .sort((a, b) => Number(isShownSignal(a.signal.dedupeKey)) - Number(isShownSignal(b.signal.dedupeKey)) || a.index - b.index)
      .map(({ signal, index }) => ({ signal, index, left: bySku(signal.lines) }));
    if (snapshots.length === 0) continue;
    ofOrder.forEach((signal, index) => {
      if (signal.scope !== 'lines' || isSnapshotSignal(signal)) return;
      const asked = bySku(signal.lines);
      for (const snapshot of snapshots) {
        if (isShownSignal(snapshot.signal.dedupeKey) && index < snapshot.index) continue;
        if (signal.occurredAt && timeOf(signal.occurredAt) > timeOf(snapshot.signal.occurredAt!)) continue;
        if (![...asked].every(([sku, quantity]) => (snapshot.left.get(sku) ?? 0) >= quantity)) continue;
        for (const [sku, quantity] of asked) snapshot.left.set(sku, snapshot.left.get(sku)! - quantity);
        held.set(signal.id, snapshot.signal);
        return;
      }
    });
  }
  return held;
}

/**
 * What a storefront order shows cancelled of its lines (`shown`, per SKU and vendor) beyond what its
 * signals (one order's) account for: the lines signals that cut or cancel something themselves, the
 * snapshots among them, not those a snapshot holds (their quantities are in it). A signal's line that
 * names its vendor (a platform_a refund's, a snapshot's) counts for that SKU and vendor; one naming
 * none (a custom cancellation's) for its SKU, whichever vendor's line shows the quantity. Nothing when
 * a whole-order signal is recorded (the order's cancellation covers every line), or nothing is missing.
 */
export function unaccountedLines(signals: OrderCancellation[], shown: { sku: string; vendor: string; quantity: number }[]): { sku: string; vendor: string; quantity: number }[] {
  if (signals.some((signal) => signal.scope === 'order')) return [];
  const held = heldBySnapshot(signals);
  const named = new Map<string, number>();
  const unnamed = new Map<string, number>();
  for (const signal of signals) {
    if (signal.scope !== 'lines' || held.has(signal.id)) continue;
    for (const line of signal.lines) {
      if (line.vendor === undefined) unnamed.set(line.sku, (unnamed.get(line.sku) ?? 0) + line.quantity);
      else named.set(JSON.stringify([line.sku, line.vendor]), (named.get(JSON.stringify([line.sku, line.vendor])) ?? 0) + line.quantity);
    }
  }
  return shown.flatMap((line) => {
    const key = JSON.stringify([line.sku, line.vendor]);
    const byVendor = Math.min(line.quantity, named.get(key) ?? 0);
    named.set(key, (named.get(key) ?? 0) - byVendor);
    const bySkuOnly = Math.min(line.quantity - byVendor, unnamed.get(line.sku) ?? 0);
    unnamed.set(line.sku, (unnamed.get(line.sku) ?? 0) - bySkuOnly);
    const quantity = line.quantity - byVendor - bySkuOnly;
    return quantity > 0 ? [{ sku: line.sku, vendor: line.vendor, quantity }] : [];
  });
}

/**
 * Of an order's signals (oldest first), those a manual job's placement already left out: its attempt
 * read the storefront order (`read`: what it showed cancelled of its lines, as of the order's time) and
 * placed only what was still open (src/orders/open.ts), so a cancellation the read counts has nothing
 * on the supplier to cancel. The read is a snapshot as `heldBySnapshot`'s are, for that job alone (the
 * order's other jobs were placed from their own order): a lines signal made no later than the read (or
 * without a platform time) is held when its quantities of the job's supplier (`matches`: the lines
 * naming its vendor, or naming none, of a SKU it placed) fit in what the read has left of them once the older signals it holds
 * took theirs. Signals a snapshot of the order holds are left out: they are applied to no job.
 */
export function heldByRead(
  read: { asOf: Date | string; lines: { sku: string; vendor: string; quantity: number }[] },
  signals: OrderCancellation[],
  matches: (line: { sku: string; vendor?: string | undefined }) => boolean,
): Set<string> {
  const elsewhere = heldBySnapshot(signals);
  const left = bySku(read.lines.filter(matches));
  const held = new Set<string>();
  for (const signal of signals) {
    if (signal.scope !== 'lines' || elsewhere.has(signal.id)) continue;
    if (signal.occurredAt && timeOf(signal.occurredAt) > timeOf(read.asOf)) continue;
    const asked = bySku(signal.lines.filter(matches));
    if (asked.size === 0 || ![...asked].every(([sku, quantity]) => (left.get(sku) ?? 0) >= quantity)) continue;
    for (const [sku, quantity] of asked) left.set(sku, left.get(sku)! - quantity);
    held.add(signal.id);
  }
  return held;
}
