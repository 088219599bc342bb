import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import type { Config } from '../config/index.ts';
import type { ResellerStoreService } from '../reseller-stores/service.ts';
import { AppError, notFound } from '../shared/errors.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import type { DivergenceRepository, ListedDivergence, WatchRepository } from './repository.ts';

/** A requested pass that no worker took within this is failed as abandoned, so it blocks no other. */
export const QUEUED_LEASE_MS = 10 * 60_000;
/** Stores given a pass per scheduling turn, at most. */
const SCHEDULE_BATCH = 500;

/** The to-do list's API and the watch's scheduling. */
export class DivergenceService {
  constructor(
    private readonly config: Pick<Config, 'divergenceIntervalMs'>,
    private readonly stores: ResellerStoreService,
    private readonly divergences: DivergenceRepository,
    private readonly passes: WatchRepository,
  ) {}

  /** GET /v1/reseller_stores/{id}/divergences: the store's open entries, newest first. */
  async list(principal: Principal, resellerStoreId: string, page: PageQuery): Promise<Page<ListedDivergence>> {
    const store = await this.stores.get(principal, resellerStoreId);
    return this.divergences.listOpen(store.id, page);
  }

  /** POST …/divergences/{divergence_id}/dismiss: the entry leaves the list and is never raised again for its job and type. */
  async dismiss(principal: Principal, resellerStoreId: string, divergenceId: string): Promise<ListedDivergence> {
    const store = await this.stores.get(principal, resellerStoreId);
    const dismissed = await this.divergences.dismiss(store.id, divergenceId, (entry) => ({
      ownerId: store.ownerId,
      resellerStoreId: store.id,
      action: 'divergence.dismissed',
      resourceType: 'divergence',
      resourceId: entry.id,
      actorId: actorOf(principal),
      metadata: { type: entry.type, syncJobId: entry.syncJobId, subjectId: entry.subjectId, ...auditContext(principal) },
    }));
    if (!dismissed) throw notFound();
    return dismissed;
  }

  /** POST …/divergence_checks: a pass over the store and its suppliers now; 409 while one runs. */
  async requestPass(principal: Principal, resellerStoreId: string): Promise<string> {
    const store = await this.stores.getActive(principal, resellerStoreId);
    const id = await this.passes.start(store, 'manual', QUEUED_LEASE_MS, (watchPassId) => ({
      ownerId: store.ownerId,
      resellerStoreId: store.id,
      action: 'divergence_check.requested',
      resourceType: 'divergence_check',
      resourceId: watchPassId,
      actorId: actorOf(principal),
      metadata: auditContext(principal),
    }));
    if (id === null) {
      throw new AppError('conflict', {
        message: 'A divergence check of this reseller store is in progress; try again when it has finished.',
        details: { reason: 'divergence_check_in_progress' },
      });
    }
    return id;
  }

  /** Starts a pass for every active store due one; returns how many were started. */
  async scheduleDue(): Promise<number> {
    return (await this.passes.startDue(this.config.divergenceIntervalMs, QUEUED_LEASE_MS, SCHEDULE_BATCH)).length;
  }

  /** Fails the running passes whose process was lost (lease expired); returns how many. */
  abandonExpired(): Promise<number> {
    return this.passes.abandonExpired();
  }

  /** Open entries of a store by type (the stats' `attention`). */
  attention(resellerStoreId: string) {
    return this.divergences.attention(resellerStoreId);
  }

  openSummary() {
    return this.divergences.openSummary();
  }
}
