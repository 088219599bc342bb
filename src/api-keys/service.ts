import { randomBytes } from 'node:crypto';
import { newId } from '../shared/ids.ts';
import { notFound } from '../shared/errors.ts';
import type { Page, PageQuery } from '../shared/paging.ts';
import { sha256Hex } from '../shared/secrets.ts';
import type { ApiKey } from './entity.ts';
import type { ApiKeyRepository } from './repository.ts';
import type { ApiKeyEnvironment } from '../../contract/enums.ts';

const API_KEY_PREFIXES = { live: 'sk_live_', test: 'sk_test_' } as const;
/** lastUsedAt is refreshed at most this often per key, to keep authentication read-only. */
const LAST_USED_RESOLUTION_MS = 60_000;

export class ApiKeyService {
  constructor(private readonly keys: ApiKeyRepository) {}

  async create(ownerId: string, name: string, environment: ApiKeyEnvironment): Promise<{ key: ApiKey; rawKey: string }> {
    const prefix = API_KEY_PREFIXES[environment];
    const rawKey = `${prefix}${randomBytes(32).toString('base64url')}`;
    const key = await this.keys.insert({
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
    return { key, rawKey };
  }

  list(ownerId: string, page: PageQuery): Promise<Page<ApiKey>> {
    return this.keys.list(ownerId, page);
  }

  async get(ownerId: string, id: string): Promise<ApiKey> {
    const key = await this.keys.findOwned(ownerId, id);
    if (!key) throw notFound();
    return key;
  }

  /** Idempotent: revoking a revoked key changes nothing. */
  async revoke(ownerId: string, id: string): Promise<void> {
    if (!(await this.keys.revoke(ownerId, id, new Date()))) throw notFound();
  }

  /** The active key for a raw key, or null. Looked up by hash: the raw key is never stored. */
  async authenticate(rawKey: string): Promise<ApiKey | null> {
    const key = await this.keys.findActiveByHash(sha256Hex(rawKey));
    if (!key) return null;
    const now = new Date();
    if (!key.lastUsedAt || now.getTime() - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      await this.keys.touchLastUsed(key.id, now);
    }
    return key;
  }
}
