import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const AuditEntry = defineEntity({
  name: 'AuditEntry',
  tableName: 'audit_entries',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    resellerStoreId: p.string(),
    action: p.string().length(64),
    resourceType: p.string().length(64),
    resourceId: p.string(),
    metadata: p.json<Record<string, unknown>>(),
    actorId: p.string(),
    createdAt: p.datetime(),
  },
  indexes: [
    { properties: ['ownerId', 'id'] },
    { properties: ['resellerStoreId', 'id'] },
    { properties: ['resourceId'] },
  ],
});
export type AuditEntry = InferEntity<typeof AuditEntry>;
