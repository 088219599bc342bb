import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { PLATFORMS } from '../orders/types.ts';

export const ResellerStore = defineEntity({
  name: 'ResellerStore',
  tableName: 'reseller_stores',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    name: p.string().length(200),
    platform: p.enum(PLATFORMS),
    shopDomain: p.string().length(255),
    /** AES-256-GCM ciphertexts (see src/shared/secrets.ts); never leave the service. */
    accessTokenEncrypted: p.text().hidden(),
    webhookSecretEncrypted: p.text().hidden(),
    createdAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['ownerId', 'id'] }],
  uniques: [
    // Webhooks find their store by domain, so only one active store may claim a domain.
    { name: 'reseller_stores_active_shop_domain_unique', properties: ['shopDomain'], where: 'deleted_at is null' },
  ],
});
export type ResellerStore = InferEntity<typeof ResellerStore>;
