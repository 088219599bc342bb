import type { AppError } from '../shared/errors.ts';
import { flushUnique } from '../db/errors.ts';
import type { Orm } from '../db/orm.ts';
import { User } from '../users/entity.ts';
import { RefreshToken } from './entity.ts';

/** Statements on users and refresh_tokens. */
export class AuthRepository {
  constructor(private readonly orm: Orm) {}

  /** Inserts the user; a taken email is `duplicate()`, thrown. */
  async insertUser(user: User, duplicate: () => AppError): Promise<User> {
    const em = this.orm.em;
    const created = em.create(User, user);
    await flushUnique(em, duplicate);
    return created;
  }

  findUserByEmail(email: string): Promise<User | null> {
    return this.orm.em.fork().findOne(User, { email });
  }

  findUser(id: string): Promise<User | null> {
    return this.orm.em.findOne(User, { id });
  }

  async setPasswordHash(userId: string, passwordHash: string): Promise<void> {
    await this.orm.em.fork().nativeUpdate(User, { id: userId }, { passwordHash });
  }

  findRefreshToken(tokenHash: string): Promise<RefreshToken | null> {
    return this.orm.em.findOne(RefreshToken, { tokenHash });
  }

  /** Marks the token rotated unless it was rotated or revoked; false when it was (a replay, or a lost race). */
  async claimRefreshToken(id: string, at: Date): Promise<boolean> {
    return (await this.orm.em.nativeUpdate(RefreshToken, { id, rotatedAt: null, revokedAt: null }, { rotatedAt: at })) > 0;
  }

  /** Whether any token of the family was revoked (a revoked family stays revoked, whatever joins it later). */
  async familyRevoked(familyId: string): Promise<boolean> {
    return (await this.orm.em.count(RefreshToken, { familyId, revokedAt: { $ne: null } })) > 0;
  }

  async revokeFamily(familyId: string, at: Date): Promise<void> {
    await this.orm.em.nativeUpdate(RefreshToken, { familyId, revokedAt: null }, { revokedAt: at });
  }

  async insertRefreshToken(token: RefreshToken): Promise<void> {
    const em = this.orm.em;
    em.create(RefreshToken, token);
    await em.flush();
  }
}
