import type { Page } from '../shared/paging.ts';
import type { AuditEntry } from './entity.ts';
import type { AuditLogRepository, AuditFilters } from './repository.ts';

export class AuditLogService {
  constructor(private readonly entries: AuditLogRepository) {}

  list(ownerId: string, filters: AuditFilters): Promise<Page<AuditEntry>> {
    return this.entries.list(ownerId, filters);
  }
}
