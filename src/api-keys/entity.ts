import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { API_KEY_ENVIRONMENTS } from '../../contract/enums.ts';

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    environment: p.enum(API_KEY_ENVIRONMENTS),
    prefix: p.string().length(16),
    name: p.string().length(200),
    /** SHA-256 of the raw key: keys are 256-bit random, so a fast hash is enough to look them up. */
    keyHash: p.string().length(64).unique(),
    lastUsedAt: p.datetime().nullable(),
    createdAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['ownerId', 'id'] }],
});
export type ApiKey = InferEntity<typeof ApiKey>;
