import type { PricingConfig, PricingMode } from '../../contract/pricing.ts';
import { actorOf, auditContext, type Principal } from '../auth/principal.ts';
import type { AuditRecord } from '../audit-log/repository.ts';
import type { Config } from '../config/index.ts';
import type { Platform } from '../orders/types.ts';
import { normaliseVendor } from '../pricing/index.ts';
import { assertCallableShopDomain, type ResellerStoreService } from '../reseller-stores/service.ts';
import { conflict, notFound, validationFailed } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import type { SecretBox } from '../shared/secrets.ts';
import type { SourceStore } from './entity.ts';
import type { SourceStoreRepository } from './repository.ts';
import { supplierTwins, type TaggedSupplier } from './twins.ts';

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
    private readonly stores: SourceStoreRepository,
    private readonly ctx: { config: Pick<Config, 'platformBaseUrl' | 'urlPolicy' | 'maxSourceStoresPerUser'>; secrets: SecretBox },
    private readonly resellerStores: ResellerStoreService,
  ) {}

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
    return this.stores.insertUnderLimit(
      {
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
      },
      limit,
      (store) => auditOf(principal, store, 'source_store.created', { vendorTag: store.vendorTag, platform: store.platform }),
      () => conflict('source_store_limit_reached', `A user can have at most ${limit} active source stores; delete one first.`),
      () => conflict('vendor_tag_taken', 'Another active source store of this reseller store has this vendor tag.', 'vendorTag'),
      (vendorTag) => normaliseVendor(vendorTag) === vendorKey,
    );
  }

  async list(principal: Principal, resellerStoreId: string, page: PageQuery): Promise<Page<SourceStore>> {
    const parent = await this.resellerStores.get(principal, resellerStoreId);
    return this.stores.listActive(parent.id, page);
  }

  async get(principal: Principal, resellerStoreId: string, id: string): Promise<SourceStore> {
    const store = await this.stores.findOwned(principal.userId, resellerStoreId, id);
    if (!store) throw notFound();
    return store;
  }

  /** A source store of the caller by id alone, deleted ones included (POST /v1/sync_jobs: a repeat after its deletion finds its job). */
  async findOwnedById(principal: Principal, id: string): Promise<SourceStore | null> {
    return this.stores.findOwnedById(principal.userId, id);
  }

  /**
   * The other active suppliers of the source store's reseller store whose vendor tag folds like its
   * own (src/source-stores/twins.ts), sorted; empty for nearly every store.
   */
  activeTwinsOf(source: TaggedSupplier): Promise<string[]> {
    return supplierTwins(this.stores).activeTwinsOf(source);
  }

  /** The platform of the storefront (reseller store) this source store supplies: the one whose order ids its jobs name. */
  async storefrontPlatformOf(principal: Principal, source: SourceStore): Promise<Platform> {
    return (await this.resellerStores.get(principal, source.resellerStoreId)).platform;
  }

  async update(principal: Principal, resellerStoreId: string, id: string, changes: SourceStoreChanges): Promise<SourceStore> {
    const { accessToken, webhookSecret, ...settings } = changes;
    const store = await this.stores.changeLocked(principal.userId, resellerStoreId, id, (store) => {
      const pricingMode = settings.pricingMode ?? store.pricingMode;
      const pricingConfig = settings.pricingConfig ?? store.pricingConfig;
      assertPricingAgrees(pricingMode, pricingConfig);
      const changed = Object.fromEntries(
        Object.entries(settings).filter(([field, value]) => value !== undefined && JSON.stringify(value) !== JSON.stringify(store[field as keyof typeof settings])),
      );
      const rotated = { ...(accessToken !== undefined && { accessToken }), ...(webhookSecret !== undefined && { webhookSecret }) };
      if (Object.keys(changed).length === 0 && Object.keys(rotated).length === 0) return null;
      return {
        audit: auditOf(principal, store, 'source_store.updated', { changed: [...Object.keys(changed), ...Object.keys(rotated)] }),
        changes: {
          ...changed,
          pricingMode,
          pricingConfig,
          ...(rotated.accessToken !== undefined && { accessTokenEncrypted: this.ctx.secrets.encrypt(rotated.accessToken, store.id) }),
          ...(rotated.webhookSecret !== undefined && { webhookSecretEncrypted: this.ctx.secrets.encrypt(rotated.webhookSecret, store.id) }),
        },
      };
    });
    if (!store) throw notFound();
    return store;
  }

  /** Soft delete; the row is read FOR UPDATE among the active ones, so only the first of concurrent deletes finds it (see ResellerStoreService.remove). */
  async remove(principal: Principal, resellerStoreId: string, id: string): Promise<void> {
    if (!(await this.stores.softDelete(principal.userId, resellerStoreId, id, (store) => auditOf(principal, store, 'source_store.deleted', {})))) throw notFound();
  }

  private async getActive(principal: Principal, resellerStoreId: string, id: string): Promise<SourceStore> {
    const store = await this.get(principal, resellerStoreId, id);
    if (store.deletedAt) throw notFound();
    return store;
  }

}

function auditOf(principal: Principal, store: SourceStore, action: string, metadata: Record<string, unknown>): AuditRecord {
  return {
      ownerId: store.ownerId,
      resellerStoreId: store.resellerStoreId,
      action,
      resourceType: 'source_store',
      resourceId: store.id,
      actorId: actorOf(principal),
      metadata: { ...metadata, ...auditContext(principal) },
  };
}

function assertPricingAgrees(mode: PricingMode, config: PricingConfig): void {
  if (config.type !== mode) {
    throw validationFailed('pricingConfig.type', `pricingConfig.type must be "${mode}" to match pricingMode.`);
  }
}
