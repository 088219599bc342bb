import { SYSTEM_ACTOR, type AuditRecord } from '../audit-log/repository.ts';
import type { Cancellation } from './entity.ts';

/** A cancellation's audit entry: every one names its sync job. */
export function cancellationAuditRecord(cancellation: Cancellation, action: string, actorId = SYSTEM_ACTOR, metadata: Record<string, unknown> = {}): AuditRecord {
  return {
    ownerId: cancellation.ownerId,
    resellerStoreId: cancellation.resellerStoreId,
    action,
    resourceType: 'cancellation',
    resourceId: cancellation.id,
    actorId,
    metadata: { syncJobId: cancellation.syncJobId, scope: cancellation.scope, lines: cancellation.lines, ...metadata },
  };
}
