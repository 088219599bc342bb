import { holdLock } from '../db/locks.ts';
import { transactionOf } from '../events/outbox.ts';
import { LockMode, type EntityManager } from '@mikro-orm/postgresql';
import type { PricingConfig, PricingMode } from '../../contract/pricing.ts';
import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import { recordAudit } from '../audit-log/repository.ts';
import type { AppContext } from '../context.ts';
import { flushUnique } from '../db/errors.ts';
import type { Platform } from '../orders/types.ts';
import { normaliseVendor } from '../pricing/index.ts';
import { assertCallableShopDomain, type ResellerStoreService } from '../reseller-stores/service.ts';
import { conflict, notFound, validationFailed } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { findPage, type Page, type PageQuery } from '../shared/paging.ts';
import { SourceStore } from './entity.ts';

/** Length of the `vendor_key` column (src/source-stores/entity.ts). */
const VENDOR_KEY_MAX_LENGTH = 200;

export interface NewSourceStore {
  name: string;
  platform: Platform;
  shopDomain: string;
  vendorTag: string;
  pricingMode: PricingMode;
  pricingConfig: PricingConfig;
  accessToken: string;
  webhookSecret: string;
}

export interface SourceStoreChanges {
  name?: string | undefined;
  pricingMode?: PricingMode | undefined;
  pricingConfig?: PricingConfig | undefined;
  /** Write-only: a rotated credential, sealed like at creation. */
  accessToken?: string | undefined;
  webhookSecret?: string | undefined;
}

export class SourceStoreService {
  constructor(
    private readonly ctx: AppContext,
    private readonly resellerStores: ResellerStoreService,
  ) {}

  private get em(): EntityManager {
    return this.ctx.orm.em;
  }

  async create(principal: Principal, resellerStoreId: string, input: NewSourceStore): Promise<SourceStore> {
    const parent = await this.resellerStores.getActive(principal, resellerStoreId);
    assertPricingAgrees(input.pricingMode, input.pricingConfig);
    await assertCallableShopDomain(this.ctx.config, input.shopDomain);
    const vendorKey = normaliseVendor(input.vendorTag);
    // Lower-casing can lengthen a tag ('İ' becomes 'i̇'), past what the vendor_key column holds.
    if (vendorKey.length > VENDOR_KEY_MAX_LENGTH) {
      throw validationFailed('vendorTag', `vendorTag: must be at most ${VENDOR_KEY_MAX_LENGTH} characters once lower-cased.`);
    }
    const id = newId('sourceStore');
    const limit = this.ctx.config.maxSourceStoresPerUser;
    return this.em.transactional(async (em) => {
      // One creation per user at a time, so concurrent ones cannot all pass the count.
      await holdLock(transactionOf(em), `source_stores:${parent.ownerId}`);
      if ((await em.count(SourceStore, { ownerId: parent.ownerId, deletedAt: null })) >= limit) {
        throw conflict('source_store_limit_reached', `A user can have at most ${limit} active source stores; delete one first.`);
      }
      const store = em.create(SourceStore, {
        id,
        ownerId: parent.ownerId,
        resellerStoreId: parent.id,
        name: input.name,
        platform: input.platform,
        shopDomain: input.shopDomain,
        vendorTag: input.vendorTag,
        vendorKey,
        pricingMode: input.pricingMode,
        pricingConfig: input.pricingConfig,
        accessTokenEncrypted: this.ctx.secrets.encrypt(input.accessToken, id),
        webhookSecretEncrypted: this.ctx.secrets.encrypt(input.webhookSecret, id),
        createdAt: new Date(),
        deletedAt: null,
      });
      this.audit(principal, store, 'source_store.created', { vendorTag: store.vendorTag, platform: store.platform }, em);
      await flushUnique(em, () => conflict('vendor_tag_taken', 'Another active source store of this reseller store has this vendor tag.', 'vendorTag'));
      return store;
    });
  }

  async list(principal: Principal, resellerStoreId: string, page: PageQuery): Promise<Page<SourceStore>> {
    const parent = await this.resellerStores.get(principal, resellerStoreId);
    return findPage(this.em, SourceStore, { resellerStoreId: parent.id, deletedAt: null }, page);
  }

  async get(principal: Principal, resellerStoreId: string, id: string): Promise<SourceStore> {
    const store = await this.em.findOne(SourceStore, { id, resellerStoreId, ownerId: principal.userId });
    if (!store) throw notFound();
    return store;
  }

  /** An active source store of the caller, found by id alone (for POST /v1/sync_jobs). */
  async findActiveById(principal: Principal, id: string): Promise<SourceStore | null> {
    return this.em.findOne(SourceStore, { id, ownerId: principal.userId, deletedAt: null });
  }

  async update(principal: Principal, resellerStoreId: string, id: string, changes: SourceStoreChanges): Promise<SourceStore> {
    const store = await this.getActive(principal, resellerStoreId, id);
    const { accessToken, webhookSecret, ...settings } = changes;
    const pricingMode = settings.pricingMode ?? store.pricingMode;
    const pricingConfig = settings.pricingConfig ?? store.pricingConfig;
    assertPricingAgrees(pricingMode, pricingConfig);
    const changed = Object.fromEntries(
      Object.entries(settings).filter(([field, value]) => value !== undefined && JSON.stringify(value) !== JSON.stringify(store[field as keyof typeof settings])),
    );
    // Credentials are never compared with (or read back from) the sealed ones: given is changed.
    const rotated = { ...(accessToken !== undefined && { accessToken }), ...(webhookSecret !== undefined && { webhookSecret }) };
    if (Object.keys(changed).length === 0 && Object.keys(rotated).length === 0) return store;
    this.em.assign(store, {
      ...changed,
      pricingMode,
      pricingConfig,
      ...(rotated.accessToken !== undefined && { accessTokenEncrypted: this.ctx.secrets.encrypt(rotated.accessToken, store.id) }),
      ...(rotated.webhookSecret !== undefined && { webhookSecretEncrypted: this.ctx.secrets.encrypt(rotated.webhookSecret, store.id) }),
    });
    this.audit(principal, store, 'source_store.updated', { changed: [...Object.keys(changed), ...Object.keys(rotated)] });
    await this.em.flush();
    return store;
  }

  /** Soft delete; the row is read FOR UPDATE among the active ones, so only the first of concurrent deletes finds it (see ResellerStoreService.remove). */
  async remove(principal: Principal, resellerStoreId: string, id: string): Promise<void> {
    await this.em.transactional(async (em) => {
      const store = await em.findOne(
        SourceStore,
        { id, resellerStoreId, ownerId: principal.userId, deletedAt: null },
        { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true },
      );
      if (!store) throw notFound();
      store.deletedAt = new Date();
      this.audit(principal, store, 'source_store.deleted', {}, em);
    });
  }

  private async getActive(principal: Principal, resellerStoreId: string, id: string): Promise<SourceStore> {
    const store = await this.get(principal, resellerStoreId, id);
    if (store.deletedAt) throw notFound();
    return store;
  }

  private audit(principal: Principal, store: SourceStore, action: string, metadata: Record<string, unknown>, em = this.em) {
    recordAudit(em, {
      ownerId: store.ownerId,
      resellerStoreId: store.resellerStoreId,
      action,
      resourceType: 'source_store',
      resourceId: store.id,
      actorId: actorOf(principal),
      metadata: { ...metadata, ...auditContext(principal) },
    });
  }
}

function assertPricingAgrees(mode: PricingMode, config: PricingConfig): void {
  if (config.type !== mode) {
    throw validationFailed('pricingConfig.type', `pricingConfig.type must be "${mode}" to match pricingMode.`);
  }
}
