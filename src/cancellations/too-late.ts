import { insertAudit, SYSTEM_ACTOR } from '../audit-log/repository.ts';
import type { Trx } from '../db/sql.ts';
import type { Outbox } from '../events/outbox.ts';
import { cancellationAuditRecord } from './audit.ts';
import type { Cancellation } from './entity.ts';
import { jobEventIn } from './events.ts';
import type { DivergenceRaising } from './ports.ts';
import type { CancellationRepository } from './repository.ts';

/** How the reason of a cancellation made `too_late` by a later fulfillment begins (the supplier had accepted it). */
const SHIPPED_ANYWAY = 'the supplier shipped anyway';

/** The reason of a cancellation a fulfillment made `too_late`: `SHIPPED_ANYWAY`, then when the fulfillment came. */
export const shippedAnywayReason = (when: string): string => `${SHIPPED_ANYWAY}: ${when}`;

/** A cancellation the supplier had accepted (`cancelled`) before a fulfillment of the order made it `too_late`. */
export const acceptedThenShipped = (c: Cancellation): boolean => c.outcome === 'too_late' && (c.reason?.startsWith(`${SHIPPED_ANYWAY}:`) ?? false);

/**
 * How the reason of a lines cancellation that cancelled the whole supplier order begins: on a platform
 * that cannot cancel some lines only, its lines and those asked before were every open line
 * (src/cancellations/attempt.ts `cancelWholeForLines`).
 */
export const WHOLE_FOR_LINES = 'every line the supplier holds is cancelled at the storefront';

/**
 * A cancellation that cancelled the whole supplier order, whatever its scope: one of scope `order`, or
 * a lines cancellation that cancelled it whole (`WHOLE_FOR_LINES`). Counted as a whole-order one when
 * the order is reported back cancelled, and when a later signal looks for lines still open.
 */
export const cancelledWhole = (c: Cancellation): boolean =>
  c.scope === 'order' || (c.status === 'completed' && c.outcome === 'cancelled' && (c.reason?.startsWith(WHOLE_FOR_LINES) ?? false));

/** What marking a cancellation too late writes with. */
export interface TooLateWriting {
  repository: CancellationRepository;
  divergences: DivergenceRaising;
  outbox: Outbox;
}

/**
 * A cancellation that ended with nothing of the supplier order left to ship (the whole order, or its
 * last open lines: `closesOrder`): one a fulfillment contradicts.
 */
export const endsWholeOrder = (c: Cancellation): boolean =>
  c.status === 'completed' && ((c.scope === 'order' && (c.outcome === 'cancelled' || c.outcome === 'not_placed')) || (c.closesOrder && c.outcome === 'cancelled'));

/** A whole-order cancellation still being made (pending, processing, or failed and waiting for its retry). */
const wholeOrderInFlight = (c: Cancellation): boolean => c.scope === 'order' && (c.status === 'pending' || c.status === 'processing' || c.status === 'failed');

/**
 * The supplier shipped a job whose whole order a cancellation ended `cancelled` or `not_placed`: the
 * latest such cancellation becomes `too_late` (audit and event `cancellation.too_late`, a `too_late`
 * entry on the to-do list), once per job. Runs in `trx`, under the job's placed-job lock
 * (src/sync-jobs/placed-lock.ts), which both a fulfillment's recording and such a cancellation's
 * outcome hold: whichever commits second sees the other. Not while a later whole-order cancellation
 * is still being made (the order asked again once found: `askWholeOrderAgainIn`): its own outcome
 * tells of the shipment (the supplier answers that it shipped, or the outcome finds this
 * fulfillment), so the shipment is reported once, by it. Returns whether it marked one.
 */
export async function shippedAnywayIn(trx: Trx, deps: TooLateWriting, syncJobId: string, reason: string): Promise<boolean> {
  const cancellations = await deps.repository.forJobsIn(trx, [syncJobId]);
  if (cancellations.some((c) => c.outcome === 'too_late')) return false;
  if (cancellations.some(wholeOrderInFlight)) return false;
  // One that left nothing to ship: lines cancelled or cut leave the rest to ship, and its shipment is no news.
  const latest = cancellations.findLast(endsWholeOrder);
  if (!latest || !(await deps.repository.markTooLate(trx, latest, reason))) return false;
  await insertAudit(trx, [cancellationAuditRecord({ ...latest, outcome: 'too_late', reason }, 'cancellation.too_late', SYSTEM_ACTOR, { previousOutcome: latest.outcome, reason })]);
  await deps.divergences.raise(trx, { ownerId: latest.ownerId, resellerStoreId: latest.resellerStoreId, syncJobId, type: 'too_late', subjectId: latest.id, detail: `Cancelled too late: ${reason}.` });
  const event = await jobEventIn(trx, 'cancellation.too_late', syncJobId);
  if (event) await deps.outbox.append(trx, [event]);
  return true;
}
