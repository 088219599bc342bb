import type { AppContext } from '../context.ts';
import type { Page } from '../shared/paging.ts';
import type { AuditEntry } from './entity.ts';
import { AuditLogRepository, type AuditFilters } from './repository.ts';

export class AuditLogService {
  private readonly entries: AuditLogRepository;

  constructor(ctx: AppContext) {
    this.entries = new AuditLogRepository(ctx.orm);
  }

  list(ownerId: string, filters: AuditFilters): Promise<Page<AuditEntry>> {
    return this.entries.list(ownerId, filters);
  }
}
