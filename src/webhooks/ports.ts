import type { ResellerStore } from '../reseller-stores/entity.ts';
import type { SourceStore } from '../source-stores/entity.ts';
import type { SyncJob } from '../sync-jobs/entity.ts';

/**
 * The job a source store placed as an order: the sync jobs' repository, handed in by the composition
 * root (src/services.ts) widened to the stores' former records: a job of these stores first, else one
 * of a deleted record of the same supplier (reseller store, owner, platform, domain) that they
 * replaced (src/source-stores/former-records.ts).
 */
export interface JobsBySourceOrder {
  findBySourceOrder(sourceStoreIds: string[], sourceOrderId: string): Promise<SyncJob | null>;
}

/** The source stores of a supplier domain, for checking a fulfillment webhook's signature: the source stores' repository. */
export interface SourceStoreReads {
  /** The version of a domain's source stores, bumped on any change; null when no source store ever had the domain. */
  domainVersion(shopDomain: string): Promise<number | null>;
  activeByDomain(shopDomain: string): Promise<SourceStore[]>;
  /** A reseller store's active source stores, which routing matches orders against. */
  activeOf(resellerStoreId: string): Promise<SourceStore[]>;
  /** One active source store by id (the per-store fulfillment webhook URL). */
  findActive(id: string): Promise<SourceStore | null>;
  markWebhookProven(ids: string[]): Promise<void>;
}

/** The reseller store an order webhook comes from: the reseller stores' repository. */
export interface ResellerStoreReads {
  findActiveByDomain(shopDomain: string): Promise<ResellerStore | null>;
}
