import { LockMode, type EntityManager } from '@mikro-orm/postgresql';
import { cancellationStats, type CancellationStats } from '../cancellations/stats.ts';
import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import { recordAudit } from '../audit-log/repository.ts';
import type { AppContext } from '../context.ts';
import { flushUnique } from '../db/errors.ts';
import { sqlOf } from '../db/sql.ts';
import type { Platform } from '../orders/types.ts';
import { SourceStore } from '../source-stores/entity.ts';
import { conflict, notFound, validationFailed } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { findPage, type Page, type PageQuery } from '../shared/paging.ts';
import { shopDomainRefusal } from '../shared/url-safety.ts';
import { ResellerStore } from './entity.ts';
import { readStoreStats, type StoreStats } from './repository.ts';

export interface NewResellerStore {
  name: string;
  platform: Platform;
  shopDomain: string;
  accessToken: string;
  webhookSecret: string;
}

export class ResellerStoreService {
  constructor(private readonly ctx: AppContext) {}

  private get em(): EntityManager {
    return this.ctx.orm.em;
  }

  async create(principal: Principal, input: NewResellerStore): Promise<ResellerStore> {
    await assertCallableShopDomain(this.ctx.config, input.shopDomain);
    const id = newId('resellerStore');
    const store = this.em.create(ResellerStore, {
      id,
      ownerId: principal.userId,
      name: input.name,
      platform: input.platform,
      shopDomain: input.shopDomain,
      accessTokenEncrypted: this.ctx.secrets.encrypt(input.accessToken, id),
      webhookSecretEncrypted: this.ctx.secrets.encrypt(input.webhookSecret, id),
      createdAt: new Date(),
      deletedAt: null,
    });
    this.audit(principal, store, 'reseller_store.created', { shopDomain: store.shopDomain, platform: store.platform });
    await flushUnique(this.em, () => conflict('shop_domain_taken', 'Another active reseller store uses this shop domain.', 'shopDomain'));
    return store;
  }

  list(principal: Principal, page: PageQuery): Promise<Page<ResellerStore>> {
    return findPage(this.em, ResellerStore, { ownerId: principal.userId, deletedAt: null }, page);
  }

  /** The caller's store (deleted ones included); another user's store is "not found". */
  async get(principal: Principal, id: string): Promise<ResellerStore> {
    const store = await this.em.findOne(ResellerStore, { id, ownerId: principal.userId });
    if (!store) throw notFound();
    return store;
  }

  /** Counts by status and recent activity of the caller's store, counted in the database. */
  async stats(principal: Principal, id: string): Promise<StoreStats & { cancellations: CancellationStats }> {
    const store = await this.get(principal, id);
    const [stats, cancellations] = await Promise.all([readStoreStats(sqlOf(this.ctx.orm), store.id), cancellationStats(this.ctx.orm, store.id)]);
    return { ...stats, cancellations };
  }

  async getActive(principal: Principal, id: string): Promise<ResellerStore> {
    const store = await this.get(principal, id);
    if (store.deletedAt) throw notFound();
    return store;
  }

  async rename(principal: Principal, id: string, name: string | undefined): Promise<ResellerStore> {
    const store = await this.getActive(principal, id);
    if (name !== undefined && name !== store.name) {
      this.audit(principal, store, 'reseller_store.updated', { name: { from: store.name, to: name } });
      store.name = name;
      await this.em.flush();
    }
    return store;
  }

  /**
   * Soft-deletes the store and its source stores: nothing is routed through them any more. The row
   * is read FOR UPDATE among the active ones, so of concurrent deletes exactly one finds it (and
   * audits); the others wait for it, find it deleted and answer 404 like any later delete.
   */
  async remove(principal: Principal, id: string): Promise<void> {
    await this.em.transactional(async (em) => {
      const store = await em.findOne(ResellerStore, { id, ownerId: principal.userId, deletedAt: null }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (!store) throw notFound();
      const now = new Date();
      store.deletedAt = now;
      await em.nativeUpdate(SourceStore, { resellerStoreId: store.id, deletedAt: null }, { deletedAt: now });
      this.audit(principal, store, 'reseller_store.deleted', {}, em);
    });
  }

  private audit(principal: Principal, store: ResellerStore, action: string, metadata: Record<string, unknown>, em = this.em) {
    recordAudit(em, {
      ownerId: store.ownerId,
      resellerStoreId: store.id,
      action,
      resourceType: 'reseller_store',
      resourceId: store.id,
      actorId: actorOf(principal),
      metadata: { ...metadata, ...auditContext(principal) },
    });
  }
}

/** Refuses (400) a shop domain the service must not call: it is, or resolves to, a private address (src/shared/url-safety.ts). */
export async function assertCallableShopDomain(config: AppContext['config'], shopDomain: string): Promise<void> {
  const refusal = await shopDomainRefusal(shopDomain, config);
  if (refusal) throw validationFailed('shopDomain', `The shop domain ${refusal}.`);
}
