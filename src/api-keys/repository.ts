import { LockMode } from '@mikro-orm/postgresql';
import type { Orm } from '../db/orm.ts';
import { findPage } from '../db/paging.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import { ApiKey } from './entity.ts';

/** Statements on api_keys. */
export class ApiKeyRepository {
  constructor(private readonly orm: Orm) {}

  async insert(key: ApiKey): Promise<ApiKey> {
    const em = this.orm.em;
    const created = em.create(ApiKey, key);
    await em.flush();
    return created;
  }

  list(ownerId: string, page: PageQuery): Promise<Page<ApiKey>> {
    return findPage(this.orm.em, ApiKey, { ownerId }, page);
  }

  findOwned(ownerId: string, id: string): Promise<ApiKey | null> {
    return this.orm.em.findOne(ApiKey, { id, ownerId });
  }

  /**
   * Sets revokedAt unless it is set; false when the user has no such key. The row is read FOR
   * UPDATE, so of concurrent revocations the first sets revokedAt and the others find it set.
   */
  revoke(ownerId: string, id: string, at: Date): Promise<boolean> {
    return this.orm.em.transactional(async (em) => {
      const key = await em.findOne(ApiKey, { id, ownerId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (!key) return false;
      key.revokedAt ??= at;
      return true;
    });
  }

  /** The active key with this hash, or null. */
  findActiveByHash(keyHash: string): Promise<ApiKey | null> {
    return this.orm.em.findOne(ApiKey, { keyHash, revokedAt: null });
  }

  async touchLastUsed(id: string, at: Date): Promise<void> {
    await this.orm.em.nativeUpdate(ApiKey, { id }, { lastUsedAt: at });
  }
}
