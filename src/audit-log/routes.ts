import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { principalOf } from '../auth/principal.ts';
import { listBody } from '../http/list.ts';
import { iso } from '../shared/time.ts';
import type { AuditEntry } from './entity.ts';
import type { AuditLogService } from './service.ts';

function presentAuditEntry(entry: AuditEntry) {
  return {
    id: entry.id,
    resellerStoreId: entry.resellerStoreId,
    action: entry.action,
    resourceType: entry.resourceType,
    resourceId: entry.resourceId,
    metadata: entry.metadata,
    actorId: entry.actorId,
    createdAt: iso(entry.createdAt),
  };
}

export function auditLogRoutes(auditLog: AuditLogService) {
  const s = initServer();
  return s.router(contract.auditLog, {
    list: async ({ query, req }) => ({
      status: 200,
      body: listBody(req, await auditLog.list(principalOf(req).userId, query), presentAuditEntry),
    }),
  });
}
