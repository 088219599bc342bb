import { LockMode, type RequiredEntityData } from '@mikro-orm/postgresql';
import { recordAudit, type AuditRecord } from '../audit-log/repository.ts';
import { flushUnique } from '../db/errors.ts';
import { holdLock } from '../db/locks.ts';
import type { Orm } from '../db/orm.ts';
import { sqlOf, transactionOf, type Trx } from '../db/sql.ts';
import { notFound, type AppError } from '../shared/errors.ts';
import { findPage } from '../db/paging.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import { SourceStore } from './entity.ts';
import type { PricingConfig } from '../../contract/pricing.ts';

/** Statements on source_stores: the API's, each change with its audit entry, and the webhook path's without the unit of work. */
export class SourceStoreRepository {
  constructor(private readonly orm: Orm) {}

  /**
   * The version of a supplier domain's source stores (bumped by a trigger on any change to any of
   * them, see the entity); null when no source store ever had the domain. One indexed read.
   */
  async domainVersion(shopDomain: string): Promise<number | null> {
    const row = await sqlOf(this.orm).selectFrom('source_store_domains').select('version').where('shop_domain', '=', shopDomain).executeTakeFirst();
    return row?.version ?? null;
  }

  /** The active source stores of a domain (several users may have a record of one supplier). */
  activeByDomain(shopDomain: string): Promise<SourceStore[]> {
    return this.orm.em.fork().find(SourceStore, { shopDomain, deletedAt: null });
  }

  /**
   * Inserts the store with its audit entry, unless its user has `limit` active ones (`tooMany()`,
   * thrown) or its reseller store has an active one with its vendor tag (`duplicate()`). One creation
   * per user at a time (a lock on the user), so concurrent ones cannot all pass the count.
   */
  /**
   * `sameVendor` tells whether an active store's tag is the new one's: checked against the tags, under
   * the owner's lock, as well as by the unique index on the stored key, since a store may keep a key
   * of an earlier fold (Migration20261127041900).
   */
  insertUnderLimit(
    store: RequiredEntityData<SourceStore>,
    limit: number,
    audit: (store: SourceStore) => AuditRecord,
    tooMany: () => AppError,
    duplicate: () => AppError,
    sameVendor: (vendorTag: string) => boolean,
  ): Promise<SourceStore> {
    return this.orm.em.transactional(async (em) => {
      const trx = transactionOf(em);
      await holdLock(trx, `source_stores:${store.ownerId}`);
      const parent = await trx.selectFrom('reseller_stores').select('id').where('id', '=', store.resellerStoreId as string).where('deleted_at', 'is', null).forShare().executeTakeFirst();
      if (!parent) throw notFound();
      if ((await em.count(SourceStore, { ownerId: store.ownerId, deletedAt: null })) >= limit) throw tooMany();
      const tags = await trx.selectFrom('source_stores').select('vendor_tag').where('reseller_store_id', '=', store.resellerStoreId as string).where('deleted_at', 'is', null).execute();
      if (tags.some((row) => sameVendor(row.vendor_tag))) throw duplicate();
      const created = em.create(SourceStore, store);
      recordAudit(em, audit(created));
      await flushUnique(em, duplicate);
      return created;
    });
  }

  listActive(resellerStoreId: string, page: PageQuery): Promise<Page<SourceStore>> {
    return findPage(this.orm.em, SourceStore, { resellerStoreId, deletedAt: null }, page);
  }

  /** The user's source store of this reseller store, deleted ones included. */
  findOwned(ownerId: string, resellerStoreId: string, id: string): Promise<SourceStore | null> {
    return this.orm.em.findOne(SourceStore, { id, resellerStoreId, ownerId });
  }

  /** A source store of the user, by id alone, deleted ones included. */
  findOwnedById(ownerId: string, id: string): Promise<SourceStore | null> {
    return this.orm.em.findOne(SourceStore, { id, ownerId });
  }

  /** Reads the user's active store FOR UPDATE and applies what `plan` makes of it, in one transaction; null when there is none. */
  changeLocked(ownerId: string, resellerStoreId: string, id: string, plan: (store: SourceStore) => { changes: Partial<SourceStore>; audit: AuditRecord } | null): Promise<SourceStore | null> {
    return this.orm.em.transactional(async (em) => {
      const store = await em.findOne(SourceStore, { id, resellerStoreId, ownerId, deletedAt: null }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (!store) return null;
      const planned = plan(store);
      if (planned) {
        em.assign(store, planned.changes);
        recordAudit(em, planned.audit);
      }
      return store;
    });
  }

  /** Soft-deletes the user's active store with its audit entry; false when there is none. Read FOR UPDATE: only the first of concurrent deletes finds it. */
  softDelete(ownerId: string, resellerStoreId: string, id: string, audit: (store: SourceStore) => AuditRecord): Promise<boolean> {
    return this.orm.em.transactional(async (em) => {
      const store = await em.findOne(SourceStore, { id, resellerStoreId, ownerId, deletedAt: null }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (!store) return false;
      store.deletedAt = new Date();
      recordAudit(em, audit(store));
      return true;
    });
  }

  /** A reseller store's active source stores (outside a request: a fork of its own). */
  activeOf(resellerStoreId: string): Promise<SourceStore[]> {
    return this.orm.em.fork().find(SourceStore, { resellerStoreId, deletedAt: null });
  }

  /** One active source store by id, whoever owns it (a fulfillment webhook naming its store in the URL). */
  findActive(id: string): Promise<SourceStore | null> {
    return this.orm.em.fork().findOne(SourceStore, { id, deletedAt: null });
  }

  /**
   * The active record of the same supplier as this deleted one, as `successorsOf` picks it (the same
   * vendor tag, else the oldest); null when the record is not deleted or nothing replaced it. Its
   * connection reads the supplier's store for the former record's jobs.
   */
  async activeRecordReplacing(formerId: string): Promise<SourceStore | null> {
    return (await this.successorsOf([formerId])).get(formerId)?.active ?? null;
  }

  /**
   * The deleted records of the same supplier as these active ones (`src/source-stores/former-records.ts`):
   * same owner, reseller store, platform and shop domain, soft-deleted. Sorted; none for a deleted or unknown id.
   */
  async formerRecordsOf(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await sqlOf(this.orm)
      .selectFrom('source_stores as former')
      .innerJoin('source_stores as active', (join) =>
        join
          .onRef('former.shop_domain', '=', 'active.shop_domain')
          .onRef('former.owner_id', '=', 'active.owner_id')
          .onRef('former.reseller_store_id', '=', 'active.reseller_store_id')
          .onRef('former.platform', '=', 'active.platform'),
      )
      .select('former.id')
      .distinct()
      .where('active.id', 'in', ids)
      .where('active.deleted_at', 'is', null)
      .where('former.deleted_at', 'is not', null)
      .orderBy('former.id')
      .execute();
    return rows.map((row) => row.id);
  }

  /**
   * The other way round (a cancellation's attempt, src/cancellations/ports.ts `SupplierSuccessors`):
   * for each of these ids that is a deleted record, the active record of the same supplier (same
   * owner, reseller store, platform and shop domain) that answers for it, with the deleted record.
   * When several are active (other vendor tags of the same shop), the one of the same vendor tag,
   * else the oldest. None for an active, unknown or unreplaced record.
   */
  async successorsOf(ids: string[]): Promise<Map<string, { former: SourceStore; active: SourceStore }>> {
    const successors = new Map<string, { former: SourceStore; active: SourceStore }>();
    if (ids.length === 0) return successors;
    const em = this.orm.em.fork();
    const formers = await em.find(SourceStore, { id: { $in: ids }, deletedAt: { $ne: null } });
    if (formers.length === 0) return successors;
    const actives = await em.find(
      SourceStore,
      { deletedAt: null, $or: formers.map(({ ownerId, resellerStoreId, platform, shopDomain }) => ({ ownerId, resellerStoreId, platform, shopDomain })) },
      { orderBy: { createdAt: 'asc', id: 'asc' } },
    );
    for (const former of formers) {
      const same = actives.filter(
        (active) => active.ownerId === former.ownerId && active.resellerStoreId === former.resellerStoreId && active.platform === former.platform && active.shopDomain === former.shopDomain,
      );
      const active = same.find((candidate) => candidate.vendorKey === former.vendorKey) ?? same[0];
      if (active) successors.set(former.id, { former, active });
    }
    return successors;
  }

  /** Records the first time these stores' webhook secret verified a delivery (kept once set). */
  async markWebhookProven(ids: string[]): Promise<void> {
    await sqlOf(this.orm)
      .updateTable('source_stores')
      .set({ webhook_proven_at: new Date() })
      .where('id', 'in', ids)
      .where('webhook_proven_at', 'is', null)
      .execute();
  }

  /** A reseller store's active suppliers, oldest first (the divergence watch's port `WatchedStores`). */
  activeInOrderOf(resellerStoreId: string): Promise<SourceStore[]> {
    return this.orm.em.fork().find(SourceStore, { resellerStoreId, deletedAt: null }, { orderBy: { id: 'asc' } });
  }

  /** Soft-deletes a reseller store's active suppliers, in its deletion's transaction (the reseller stores' port `StoreSuppliers`). */
  async softDeleteAllOfIn(trx: Trx, resellerStoreId: string, at: Date): Promise<void> {
    await trx.updateTable('source_stores').set({ deleted_at: at }).where('reseller_store_id', '=', resellerStoreId).where('deleted_at', 'is', null).execute();
  }

  /** A source store's vendor tag and pricing (the cancellations feature's port `SupplierVendorTags`); null when there is none. */
  async supplierTermsOf(sourceStoreId: string): Promise<{ vendorTag: string; pricingConfig: PricingConfig } | null> {
    const row = await sqlOf(this.orm).selectFrom('source_stores').select(['vendor_tag', 'pricing_config']).where('id', '=', sourceStoreId).executeTakeFirst();
    return row ? { vendorTag: row.vendor_tag, pricingConfig: row.pricing_config as PricingConfig } : null;
  }

  /** The vendor tags and pricing of these source stores, by id, as this transaction sees them (the cancellations feature's port `SupplierVendorTags`). */
  async supplierTermsIn(trx: Trx, sourceStoreIds: string[]): Promise<Map<string, { vendorTag: string; pricingConfig: PricingConfig }>> {
    if (sourceStoreIds.length === 0) return new Map();
    const rows = await trx.selectFrom('source_stores').select(['id', 'vendor_tag', 'pricing_config']).where('id', 'in', sourceStoreIds).execute();
    return new Map(rows.map((row) => [row.id, { vendorTag: row.vendor_tag, pricingConfig: row.pricing_config as PricingConfig }]));
  }
}
