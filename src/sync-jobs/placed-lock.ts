/**
 * The lock on what reaches a placed job from outside its worker: its fulfillments, its supplier's own
 * cancellation, and the divergence watch deciding it is stale. Held for the rest of a transaction
 * (src/db/locks.ts), so each of them sees the others' writes committed: a stale entry is never
 * raised beside tracking or a supplier cancellation recorded at the same moment.
 */
export const placedJobLockKey = (syncJobId: string): string => `fulfillment:${syncJobId}`;
