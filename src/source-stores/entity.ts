import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { PricingConfig } from '../../contract/pricing.ts';
import { PLATFORMS } from '../orders/types.ts';
import { PRICING_MODES } from '../../contract/enums.ts';

export const SourceStore = defineEntity({
  name: 'SourceStore',
  tableName: 'source_stores',
  properties: {
    id: p.string().primary(),
    /** Copied from the reseller store so ownership checks need no join. */
    ownerId: p.string(),
    resellerStoreId: p.string(),
    name: p.string().length(200),
    platform: p.enum(PLATFORMS),
    shopDomain: p.string().length(255).index(),
    vendorTag: p.string().length(200),
    /**
     * vendorTag normalised (normaliseVendor, src/pricing/vendor.ts): one active store per key and reseller
     * store. Routing and creation fold the tags themselves; a store that shared its folded tag with another
     * when keys were recomputed keeps its earlier key (Migration20261127041900).
     */
    vendorKey: p.string().length(200),
    pricingMode: p.enum(PRICING_MODES),
    pricingConfig: p.json<PricingConfig>(),
    accessTokenEncrypted: p.text().hidden(),
    webhookSecretEncrypted: p.text().hidden(),
    createdAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
    /**
     * When a fulfillment webhook first verified with this store's secret: proven senders are checked
     * first, earliest first, so strangers' records of the same domain cannot push a supplier's out
     * (src/webhooks/source-secrets.ts).
     */
    webhookProvenAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['resellerStoreId', 'id'] }],
  uniques: [
    {
      name: 'source_stores_active_vendor_key_unique',
      properties: ['resellerStoreId', 'vendorKey'],
      where: 'deleted_at is null',
    },
  ],
  // Every change of a source store bumps its domain's version (SourceStoreDomain, below).
  triggers: [
    {
      name: 'bump_domain_version',
      timing: 'after',
      events: ['insert', 'update', 'delete'],
      forEach: 'row',
      body: `
        if tg_op <> 'INSERT' then
          insert into source_store_domains as d (shop_domain, version) values (old.shop_domain, 1)
            on conflict (shop_domain) do update set version = d.version + 1;
        end if;
        if tg_op = 'INSERT' or (tg_op = 'UPDATE' and new.shop_domain is distinct from old.shop_domain) then
          insert into source_store_domains as d (shop_domain, version) values (new.shop_domain, 1)
            on conflict (shop_domain) do update set version = d.version + 1;
        end if;
        return null;`,
    },
  ],
});
export type SourceStore = InferEntity<typeof SourceStore>;

/**
 * A version per supplier domain, bumped by a trigger on every insert, update or delete of a
 * source store with that domain (see the migration). The fulfillment webhook reads it alone to
 * know whether its cached, decrypted secrets of the domain are still current, whatever the number
 * of records sharing the domain and whichever process changed them.
 */
export const SourceStoreDomain = defineEntity({
  name: 'SourceStoreDomain',
  tableName: 'source_store_domains',
  properties: {
    shopDomain: p.string().length(255).primary(),
    version: p.integer(),
  },
});
export type SourceStoreDomain = InferEntity<typeof SourceStoreDomain>;
