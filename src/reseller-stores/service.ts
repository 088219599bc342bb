import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import type { AuditRecord } from '../audit-log/repository.ts';
import type { Config } from '../config/index.ts';
import type { Platform } from '../orders/types.ts';
import { conflict, notFound, validationFailed } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import type { SecretBox } from '../shared/secrets.ts';
import { shopDomainRefusal } from '../shared/url-safety.ts';
import type { ResellerStore } from './entity.ts';
import type { CancellationStats } from '../cancellations/stats.ts';
import type { ResellerStoreRepository, StoreStats } from './repository.ts';
import type { AttentionReads, CancellationCounts, DivergenceCounts, StoreSuppliers } from './ports.ts';

export interface NewResellerStore {
  name: string;
  platform: Platform;
  shopDomain: string;
  accessToken: string;
  webhookSecret: string;
}

export class ResellerStoreService {
  constructor(
    private readonly stores: ResellerStoreRepository,
    private readonly ctx: { config: Pick<Config, 'platformBaseUrl' | 'urlPolicy'>; secrets: SecretBox },
    private readonly attention: AttentionReads,
    private readonly cancellations: CancellationCounts,
    private readonly suppliers: StoreSuppliers,
  ) {}

  async create(principal: Principal, input: NewResellerStore): Promise<ResellerStore> {
    await assertCallableShopDomain(this.ctx.config, input.shopDomain);
    const id = newId('resellerStore');
    return this.stores.insert(
      {
        id,
        ownerId: principal.userId,
        name: input.name,
        platform: input.platform,
        shopDomain: input.shopDomain,
        accessTokenEncrypted: this.ctx.secrets.encrypt(input.accessToken, id),
        webhookSecretEncrypted: this.ctx.secrets.encrypt(input.webhookSecret, id),
        createdAt: new Date(),
        deletedAt: null,
      },
      (store) => auditOf(principal, store, 'reseller_store.created', { shopDomain: store.shopDomain, platform: store.platform }),
      () => conflict('shop_domain_taken', 'Another active reseller store uses this shop domain.', 'shopDomain'),
    );
  }

  list(principal: Principal, page: PageQuery): Promise<Page<ResellerStore>> {
    return this.stores.list(principal.userId, page);
  }

  /** The caller's store (deleted ones included); another user's store is "not found". */
  async get(principal: Principal, id: string): Promise<ResellerStore> {
    const store = await this.stores.findOwned(principal.userId, id);
    if (!store) throw notFound();
    return store;
  }

  /** Counts by status and recent activity of the caller's store, counted in the database. */
  async stats(principal: Principal, id: string): Promise<StoreStats & { attention: DivergenceCounts; cancellations: CancellationStats }> {
    const store = await this.get(principal, id);
    const [stats, attention, cancellations] = await Promise.all([this.stores.stats(store.id), this.attention.attention(store.id), this.cancellations.statsOf(store.id)]);
    return { ...stats, attention, cancellations };
  }

  async getActive(principal: Principal, id: string): Promise<ResellerStore> {
    const store = await this.get(principal, id);
    if (store.deletedAt) throw notFound();
    return store;
  }

  async rename(principal: Principal, id: string, name: string | undefined): Promise<ResellerStore> {
    const store = await this.getActive(principal, id);
    if (name !== undefined && name !== store.name) {
      const audit = auditOf(principal, store, 'reseller_store.updated', { name: { from: store.name, to: name } });
      store.name = name;
      await this.stores.update(store, audit);
    }
    return store;
  }

  /**
   * Soft-deletes the store and its source stores: nothing is routed through them any more. The row
   * is read FOR UPDATE among the active ones, so of concurrent deletes exactly one finds it (and
   * audits); the others wait for it, find it deleted and answer 404 like any later delete.
   */
  async remove(principal: Principal, id: string): Promise<void> {
    const audit = (store: ResellerStore) => auditOf(principal, store, 'reseller_store.deleted', {});
    if (!(await this.stores.softDelete(principal.userId, id, audit, (trx, store, at) => this.suppliers.softDeleteAllOfIn(trx, store.id, at)))) throw notFound();
  }
}

function auditOf(principal: Principal, store: ResellerStore, action: string, metadata: Record<string, unknown>): AuditRecord {
  return {
      ownerId: store.ownerId,
      resellerStoreId: store.id,
      action,
      resourceType: 'reseller_store',
      resourceId: store.id,
      actorId: actorOf(principal),
      metadata: { ...metadata, ...auditContext(principal) },
  };
}

/** Refuses (400) a shop domain the service must not call: it is, or resolves to, a private address (src/shared/url-safety.ts). */
export async function assertCallableShopDomain(config: Pick<Config, 'platformBaseUrl' | 'urlPolicy'>, shopDomain: string): Promise<void> {
  const refusal = await shopDomainRefusal(shopDomain, config);
  if (refusal) throw validationFailed('shopDomain', `The shop domain ${refusal}.`);
}
