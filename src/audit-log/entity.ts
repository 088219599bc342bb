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
    // GET /v1/audit_log?action=…: without it a rare action scans the owner's whole history.
    { properties: ['ownerId', 'action', 'id'] },
    { properties: ['resellerStoreId', 'id'] },
    { properties: ['resourceId'] },
  ],
});
export type AuditEntry = InferEntity<typeof AuditEntry>;
