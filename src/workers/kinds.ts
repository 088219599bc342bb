/**
 * The one list of kinds of retried work. Each kind is defined in its feature's folder (what its
 * rows are, its machine, its queue, what one attempt does, its audit and events); the retry
 * framework (src/attempts/) knows none of them and is handed this list: one worker per kind
 * (src/workers/index.ts) and the sweep. Start-up fails on a kind listed twice, two kinds on one
 * queue or table, and a queue of retried work no kind consumes.
 */
import type { Attempt, AttemptKind, AttemptRow } from '../attempts/kind.ts';
import { Sweeper, type SweepHook, type SweptKind } from '../attempts/sweep.ts';
import type { AppContext } from '../context.ts';
import { cancellationKind } from '../cancellations/kind.ts';
import { fulfillmentKind } from '../fulfillments/kind.ts';
import { FulfillmentService } from '../fulfillments/service.ts';
import { syncJobKind } from '../sync-jobs/kind.ts';
import { SyncJobRepository } from '../sync-jobs/repository.ts';
import { ResellerStoreRepository } from '../reseller-stores/repository.ts';

export const ATTEMPT_KINDS = [syncJobKind, fulfillmentKind, cancellationKind] as const;

/** The kinds' queues, for `Queue.start` to create (src/server.ts). */
export const ATTEMPT_QUEUES = ATTEMPT_KINDS.map((kind) => kind.queue);

/** What the kinds' attempts need, built once per process. */
type KindDeps = AppContext & { syncJobReads: SyncJobRepository; resellerStoreReads: ResellerStoreRepository };

const kindDeps = (ctx: AppContext): KindDeps => ({
  ...ctx,
  syncJobReads: new SyncJobRepository(ctx.orm),
  resellerStoreReads: new ResellerStoreRepository(ctx.orm),
});

type AnyKind = AttemptKind<AttemptRow, string, object, { row: AttemptRow }, KindDeps>;

/** A kind with its attempt built for this process. */
export interface RegisteredKind {
  kind: AttemptKind<AttemptRow, string, object, { row: AttemptRow }, never>;
  attempt: Attempt<{ row: AttemptRow }>;
}

/** Every kind with what its attempt needs; throws when the list names a kind, a queue or a table twice. */
export function registerKinds(ctx: AppContext, kinds: readonly unknown[] = ATTEMPT_KINDS): RegisteredKind[] {
  const seen = { name: new Set<string>(), queue: new Set<string>(), table: new Set<string>() };
  const deps = kindDeps(ctx);
  return (kinds as readonly AnyKind[]).map((kind) => {
    for (const key of ['name', 'queue', 'table'] as const) {
      const value = key === 'queue' ? kind.queue.name : kind[key];
      if (seen[key].has(value)) throw new Error(`attempt kinds: ${key} ${value} is listed twice (src/workers/kinds.ts)`);
      seen[key].add(value);
    }
    return { kind: kind as unknown as RegisteredKind['kind'], attempt: kind.attempt(deps) };
  });
}

/** What features do after each sweep pass: the fulfillments feature claims held fulfillments. */
export function sweepHooks(ctx: AppContext): SweepHook[] {
  const fulfillments = new FulfillmentService(ctx, new SyncJobRepository(ctx.orm), new ResellerStoreRepository(ctx.orm));
  return [() => fulfillments.claimHeld()];
}

/** The sweep of this process, handed every kind and the hooks. */
export function createSweeper(ctx: AppContext, kinds: readonly SweptKind[] = registerKinds(ctx)): Sweeper {
  return new Sweeper(ctx, kinds, sweepHooks(ctx));
}
