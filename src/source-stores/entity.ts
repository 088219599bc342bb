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
    /** vendorTag trimmed and lower-cased: what line-item vendors are matched against. */
    vendorKey: p.string().length(200),
    pricingMode: p.enum(PRICING_MODES),
    pricingConfig: p.json<PricingConfig>(),
    accessTokenEncrypted: p.text().hidden(),
    webhookSecretEncrypted: p.text().hidden(),
    createdAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['resellerStoreId', 'id'] }],
  uniques: [
    {
      name: 'source_stores_active_vendor_key_unique',
      properties: ['resellerStoreId', 'vendorKey'],
      where: 'deleted_at is null',
    },
  ],
});
export type SourceStore = InferEntity<typeof SourceStore>;
