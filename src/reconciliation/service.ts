import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import type { Config } from '../config/index.ts';
import type { ResellerStoreService } from '../reseller-stores/service.ts';
import { AppError, validationFailed } from '../shared/errors.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import type { ReconciliationRun } from './entity.ts';
import type { ReconciliationRepository } from './repository.ts';

/** How far back a manual run may list. */
export const MAX_SINCE_AGE_MS = 30 * 24 * 60 * 60 * 1000;
/** A requested run that no worker took within this is failed as abandoned, so it blocks no other. */
export const QUEUED_LEASE_MS = 10 * 60_000;
/** Stores given a run per scheduling turn, at most. */
const SCHEDULE_BATCH = 500;

export class ReconciliationService {
  constructor(
    private readonly config: Pick<Config, 'reconcileIntervalMs'>,
    private readonly stores: ResellerStoreService,
    private readonly repository: ReconciliationRepository,
  ) {}

  /**
   * POST /v1/reseller_stores/{id}/reconcile: starts a run of the caller's active store now, from
   * `since` or from the store's watermark. 409 while a run of the store is in progress.
   */
  async request(principal: Principal, resellerStoreId: string, since: string | undefined): Promise<string> {
    const store = await this.stores.getActive(principal, resellerStoreId);
    const requestedSince = since === undefined ? null : checkedSince(since);
    const id = await this.repository.start(store, 'manual', requestedSince, QUEUED_LEASE_MS, (reconciliationId) => ({
      ownerId: store.ownerId,
      resellerStoreId: store.id,
      action: 'reconciliation.requested',
      resourceType: 'reconciliation',
      resourceId: reconciliationId,
      actorId: actorOf(principal),
      metadata: { since: requestedSince?.toISOString() ?? null, ...auditContext(principal) },
    }));
    if (id === null) {
      throw new AppError('conflict', {
        message: 'A reconciliation of this reseller store is in progress; try again when it has finished.',
        details: { reason: 'reconciliation_in_progress' },
      });
    }
    return id;
  }

  /** GET /v1/reseller_stores/{id}/reconciliations: the store's runs, newest first (also of a deleted store). */
  async list(principal: Principal, resellerStoreId: string, page: PageQuery): Promise<Page<ReconciliationRun>> {
    const store = await this.stores.get(principal, resellerStoreId);
    return this.repository.list(store.ownerId, store.id, page);
  }

  /** Starts a run for every active store that is due one; returns how many were started. */
  async scheduleDue(): Promise<number> {
    const started = await this.repository.startDue(this.config.reconcileIntervalMs, QUEUED_LEASE_MS, SCHEDULE_BATCH);
    return started.length;
  }

  /** Fails the running runs whose process was lost (lease expired); returns how many. */
  abandonExpired(): Promise<number> {
    return this.repository.abandonExpired();
  }

  lagByStore() {
    return this.repository.lagByStore();
  }
}

function checkedSince(since: string): Date {
  const time = new Date(since);
  const now = Date.now();
  if (time.getTime() > now) throw validationFailed('since', 'since must not be in the future.');
  if (time.getTime() < now - MAX_SINCE_AGE_MS) throw validationFailed('since', 'since must be within the last 30 days.');
  return time;
}
