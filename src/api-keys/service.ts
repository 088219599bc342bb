import { randomBytes } from 'node:crypto';
import { LockMode, type EntityManager } from '@mikro-orm/postgresql';
import type { AppContext } from '../context.ts';
import { newId } from '../shared/ids.ts';
import { notFound } from '../shared/errors.ts';
import { findPage, type Page, type PageQuery } from '../shared/paging.ts';
import { sha256Hex } from '../shared/secrets.ts';
import { ApiKey } from './entity.ts';
import type { ApiKeyEnvironment } from '../../contract/enums.ts';

const API_KEY_PREFIXES = { live: 'sk_live_', test: 'sk_test_' } as const;
/** lastUsedAt is refreshed at most this often per key, to keep authentication read-only. */
const LAST_USED_RESOLUTION_MS = 60_000;

export class ApiKeyService {
  constructor(private readonly ctx: AppContext) {}

  private get em(): EntityManager {
    return this.ctx.orm.em;
  }

  async create(ownerId: string, name: string, environment: ApiKeyEnvironment): Promise<{ key: ApiKey; rawKey: string }> {
    const prefix = API_KEY_PREFIXES[environment];
    const rawKey = `${prefix}${randomBytes(32).toString('base64url')}`;
    const key = this.em.create(ApiKey, {
      id: newId('apiKey'),
      ownerId,
      environment,
      prefix,
      name,
      keyHash: sha256Hex(rawKey),
      lastUsedAt: null,
      createdAt: new Date(),
      revokedAt: null,
    });
    await this.em.flush();
    return { key, rawKey };
  }

  list(ownerId: string, page: PageQuery): Promise<Page<ApiKey>> {
    return findPage(this.em, ApiKey, { ownerId }, page);
  }

  async get(ownerId: string, id: string): Promise<ApiKey> {
    const key = await this.em.findOne(ApiKey, { id, ownerId });
    if (!key) throw notFound();
    return key;
  }

  /**
   * Idempotent: revoking a revoked key changes nothing. The row is read FOR UPDATE, so of
   * concurrent revocations the first sets revokedAt and the others find it set.
   */
  async revoke(ownerId: string, id: string): Promise<void> {
    await this.em.transactional(async (em) => {
      const key = await em.findOne(ApiKey, { id, ownerId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (!key) throw notFound();
      key.revokedAt ??= new Date();
    });
  }

  /** The active key for a raw key, or null. Looked up by hash: the raw key is never stored. */
  async authenticate(rawKey: string): Promise<ApiKey | null> {
    const key = await this.em.findOne(ApiKey, { keyHash: sha256Hex(rawKey), revokedAt: null });
    if (!key) return null;
    const now = new Date();
    if (!key.lastUsedAt || now.getTime() - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      await this.em.nativeUpdate(ApiKey, { id: key.id }, { lastUsedAt: now });
    }
    return key;
  }
}
