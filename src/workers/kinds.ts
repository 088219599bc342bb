/**
 * The one list of kinds of retried work. Each kind is defined in its feature's folder (what its
 * rows are, its machine, its queue, what one attempt does, its audit and events); the retry
 * framework (src/attempts/) knows none of them and is handed this list: one worker per kind
 * (src/workers/index.ts) and the sweep. Start-up fails on a kind listed twice, two kinds on one
 * queue or table, and a queue of retried work no kind consumes.
 */
import type { Attempt, AttemptKind, AttemptRow, AttemptRuntime, EventRead, SettledStep } from '../attempts/kind.ts';
import { Sweeper, type SweepHook, type SweptKind } from '../attempts/sweep.ts';
import type { CancellationAttemptDeps } from '../cancellations/attempt.ts';
import { cancellationKind } from '../cancellations/kind.ts';
import { CancellationRepository, HeldSupplierCancellationRepository, jobHasCancellations } from '../cancellations/repository.ts';
import type { DivergenceRaising } from '../cancellations/ports.ts';
import { CancellationService } from '../cancellations/service.ts';
import { findAttempts } from '../attempts/repository.ts';
import type { FulfillmentAttemptDeps } from '../fulfillments/attempt.ts';
import { fulfillmentKind } from '../fulfillments/kind.ts';
import { FulfillmentRepository } from '../fulfillments/repository.ts';
import type { PlatformAdapters } from '../platforms/types.ts';
import type { SecretBox } from '../shared/secrets.ts';
import type { SyncJobAttemptDeps } from '../sync-jobs/attempt.ts';
import { syncJobKind } from '../sync-jobs/kind.ts';
import { noJobCanOwn, SyncJobRepository } from '../sync-jobs/repository.ts';
import { ResellerStoreRepository } from '../reseller-stores/repository.ts';
import { SourceStoreRepository } from '../source-stores/repository.ts';
import { supplierTwins } from '../source-stores/twins.ts';
import { cancellationOutcomeSteps, describeDivergence, raiseDivergence, resolveDivergences, resolveDivergencesOfJobs, settledSteps, trackingArrived } from '../divergence-watch/repository.ts';
import type { FulfillmentRecorded } from '../fulfillments/ports.ts';

export const ATTEMPT_KINDS = [syncJobKind, fulfillmentKind, cancellationKind] as const;

/** The cancellations' port on the to-do list (src/cancellations/ports.ts), written by the divergence list's repository in the cancellations' transactions. */
export const CANCELLATION_DIVERGENCES: DivergenceRaising = { raise: raiseDivergence, resolve: resolveDivergences, resolveOfJobs: resolveDivergencesOfJobs, describe: describeDivergence };

/**
 * What each kind's transitions also write, in their own statement (`onSettled`, src/attempts/kind.ts),
 * whoever writes them (a worker, the sweep, a manual retry): the reseller's to-do list
 * (src/divergence-watch/) raises `job_dead` / `fulfillment_dead` when a row dies, and resolves it
 * when the retried row completes. A kind added later adds its own here (cancellations:
 * `settledSteps('cancellation_dead', 'cancellations')`). Start-up fails on steps for a kind not listed.
 */
export const SETTLED_STEPS: Readonly<Record<string, readonly SettledStep[]>> = {
  sync_job: settledSteps('job_dead'),
  fulfillment: settledSteps('fulfillment_dead', 'fulfillments'),
  cancellation: [...settledSteps('cancellation_dead', 'cancellations'), ...cancellationOutcomeSteps()],
};

/**
 * What other features add to each kind's outcome events (`eventReads`, src/attempts/kind.ts): a sync
 * job's events show its cancellations, so a job with some has its outcome written in a transaction
 * that reads them; the others' in one statement. Start-up fails on reads for a kind not listed.
 */
export const EVENT_READS: Readonly<Record<string, readonly EventRead[]>> = {
  sync_job: [jobHasCancellations()],
};

/**
 * Written with every fulfillment recorded (`FulfillmentService`, in its transaction): tracking arrived,
 * so the job is not stale; unless it was recorded `skipped` (no number for a storefront that needs
 * one): it is never sent, so the customer still has no tracking.
 */
export const FULFILLMENT_RECORDED: readonly FulfillmentRecorded[] = [
  async (trx, fulfillment) => {
    if (fulfillment.status !== 'skipped') await trackingArrived(trx, fulfillment.syncJobId);
  },
];

/** The kinds' queues, for `Queue.start` to create (src/server.ts). */
export const ATTEMPT_QUEUES = ATTEMPT_KINDS.map((kind) => kind.queue);

/** What the kinds and the sweep are built from (src/server.ts): the retry framework's runtime, and the platforms the attempts call. */
export type KindInfrastructure = AttemptRuntime & { platforms: PlatformAdapters; secrets: SecretBox };

/** What the kinds' attempts need (each declares its own part), built once per process. */
type KindDeps = SyncJobAttemptDeps & FulfillmentAttemptDeps & CancellationAttemptDeps;

/** `syncJobSteps`: what the sync job kind's transitions also write, so a job a cancellation's attempt voids resolves its to-do entry too. */
const kindDeps = ({ orm, platforms, secrets, pacer, logger, outbox, config, queue, metrics }: KindInfrastructure, syncJobSteps: readonly SettledStep[]): KindDeps => {
  const syncJobs = new SyncJobRepository(orm, syncJobSteps);
  const fulfillments = new FulfillmentRepository(orm, noJobCanOwn);
  const sourceStores = new SourceStoreRepository(orm);
  const cancellationRepository = new CancellationRepository(orm);
  const cancellations = new CancellationService(
    {
      jobs: syncJobs,
      vendorTags: sourceStores,
      queue,
      outbox,
      metrics,
      timelines: { find: (rowIds: string[]) => findAttempts(orm, rowIds) },
      held: new HeldSupplierCancellationRepository(orm, noJobCanOwn),
      formerRecords: sourceStores,
      logger,
    },
    cancellationRepository,
    CANCELLATION_DIVERGENCES,
  );
  return {
    syncJobReads: syncJobs,
    // The sync jobs' port on the suppliers sharing a folded vendor tag (src/sync-jobs/ports.ts `SupplierTwins`).
    supplierTwins: supplierTwins(sourceStores),
    // The sync jobs' port on the partial cancellations a manual job's placement applies (src/sync-jobs/ports.ts `PlacedManualJobs`), as src/services.ts builds the feature.
    placedManualJobs: cancellations,
    // The cancellations' attempt's port on the order its lookup found for a voided job: recorded, its dead whole-order cancellation re-opened.
    voidedOrders: cancellations,
    // The cancellations' attempt's port on the active record that replaced a job's deleted supplier record (src/cancellations/ports.ts `SupplierSuccessors`).
    supplierSuccessors: sourceStores,
    // The cancellations' port on the sync jobs (src/cancellations/ports.ts `CancelledJobs`).
    cancelledJobs: syncJobs,
    resellerStoreReads: new ResellerStoreRepository(orm),
    fulfillments,
    // The cancellations' ports on the fulfillments recorded and on the to-do list.
    shipments: fulfillments,
    divergences: CANCELLATION_DIVERGENCES,
    cancellationRepository,
    platforms,
    secrets,
    pacer,
    logger,
    outbox,
    config,
  };
};

type AnyKind = AttemptKind<AttemptRow, string, object, { row: AttemptRow }, KindDeps>;

/** A kind with its attempt built for this process. */
export interface RegisteredKind {
  kind: AttemptKind<AttemptRow, string, object, { row: AttemptRow }, never>;
  attempt: Attempt<{ row: AttemptRow }>;
}

/**
 * Every kind with what its attempt needs, its settled steps (`settled`) and event reads; throws when
 * the list names a kind, a queue or a table twice, or when there are steps or reads for a kind not listed.
 */
export function registerKinds(
  infrastructure: KindInfrastructure,
  kinds: readonly unknown[] = ATTEMPT_KINDS,
  settled: Readonly<Record<string, readonly SettledStep[]>> = SETTLED_STEPS,
  eventReads: Readonly<Record<string, readonly EventRead[]>> = EVENT_READS,
): RegisteredKind[] {
  const seen = { name: new Set<string>(), queue: new Set<string>(), table: new Set<string>() };
  const deps = kindDeps(infrastructure, settled.sync_job ?? []);
  const registered = (kinds as readonly AnyKind[]).map((kind) => {
    for (const key of ['name', 'queue', 'table'] as const) {
      const value = key === 'queue' ? kind.queue.name : kind[key];
      if (seen[key].has(value)) throw new Error(`attempt kinds: ${key} ${value} is listed twice (src/workers/kinds.ts)`);
      seen[key].add(value);
    }
    const withSteps = { ...kind, onSettled: settled[kind.name] ?? [], eventReads: eventReads[kind.name] ?? [] };
    return { kind: withSteps as unknown as RegisteredKind['kind'], attempt: kind.attempt(deps) };
  });
  for (const [what, steps] of [['settled steps', settled], ['event reads', eventReads]] as const) {
    for (const name of Object.keys(steps)) {
      if (!seen.name.has(name)) throw new Error(`attempt kinds: ${what} for ${name}, which is not listed (src/workers/kinds.ts)`);
    }
  }
  return registered;
}

/**
 * The sweep of this process, handed every kind and the hooks that run after each pass (the
 * fulfillments feature's: claiming held fulfillments; src/server.ts hands them to the workers).
 */
export function createSweeper(infrastructure: KindInfrastructure, kinds: readonly SweptKind[] = registerKinds(infrastructure), hooks: readonly SweepHook[] = []): Sweeper {
  return new Sweeper(infrastructure, kinds, hooks);
}
