import { SYSTEM_ACTOR, type AuditRecord } from '../audit-log/repository.ts';
import { shownSku, type Cancellation } from './entity.ts';

/**
 * A cancellation's audit entry: every one names its sync job, and its lines as the API shows them
 * (the supplier's SKU), with the storefront's where it differs (`storefrontSku`).
 */
export function cancellationAuditRecord(cancellation: Cancellation, action: string, actorId = SYSTEM_ACTOR, metadata: Record<string, unknown> = {}): AuditRecord {
  return {
    ownerId: cancellation.ownerId,
    resellerStoreId: cancellation.resellerStoreId,
    action,
    resourceType: 'cancellation',
    resourceId: cancellation.id,
    actorId,
    metadata: { syncJobId: cancellation.syncJobId, scope: cancellation.scope, lines: cancellation.lines.map(auditedLine), ...metadata },
  };
}

function auditedLine(line: Cancellation['lines'][number]) {
  return line.supplierSku === undefined ? { sku: line.sku, quantity: line.quantity } : { sku: line.supplierSku, quantity: line.quantity, storefrontSku: line.sku };
}
