import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from 'kysely';
import type { AppContext } from '../context.ts';
import { newId } from '../shared/ids.ts';
import { findPage, type Page, type PageQuery } from '../shared/paging.ts';
import { AuditEntry } from './entity.ts';

export interface AuditRecord {
  ownerId: string;
  resellerStoreId: string;
  action: string;
  resourceType: string;
  resourceId: string;
  actorId: string;
  metadata?: Record<string, unknown>;
}

export const SYSTEM_ACTOR = 'system';

/**
 * Adds an audit entry to the caller's unit of work, so it commits or rolls back together with
 * the change it describes. Entries are never updated or deleted.
 */
export function recordAudit(em: EntityManager, record: AuditRecord): AuditEntry {
  return em.create(AuditEntry, { id: newId('auditEntry'), metadata: {}, createdAt: new Date(), ...record });
}

/** `insert into audit_entries (…)` for the SQL hot paths; the values follow in this column order. */
export const INSERT_AUDIT_ENTRIES = sql`insert into audit_entries (id, owner_id, reseller_store_id, action, resource_type, resource_id, metadata, actor_id, created_at)`;

export interface AuditFilters extends PageQuery {
  reseller_store_id?: string | undefined;
  action?: string | undefined;
  resource_id?: string | undefined;
}

export class AuditLogService {
  constructor(private readonly ctx: AppContext) {}

  list(ownerId: string, filters: AuditFilters): Promise<Page<AuditEntry>> {
    return findPage(
      this.ctx.orm.em,
      AuditEntry,
      {
        ownerId,
        ...(filters.reseller_store_id !== undefined && { resellerStoreId: filters.reseller_store_id }),
        ...(filters.action !== undefined && { action: filters.action }),
        ...(filters.resource_id !== undefined && { resourceId: filters.resource_id }),
      },
      filters,
    );
  }
}
