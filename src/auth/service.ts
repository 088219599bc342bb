import argon2 from 'argon2';
import { newId } from '../shared/ids.ts';
import { AppError, conflict } from '../shared/errors.ts';
import { sha256Hex } from '../shared/secrets.ts';
import type { User } from '../users/entity.ts';
import type { AuthRepository } from './repository.ts';
import { newOpaqueToken, REFRESH_TOKEN_TTL_SECONDS, type AccessToken, type AccessTokens } from './tokens.ts';

export interface Session extends AccessToken {
  refreshToken: string;
  refreshExpiresAt: Date;
}

/**
 * OWASP's first recommended argon2id configuration (19 MiB, 2 passes, 1 lane). The library's
 * default (64 MiB, 4 lanes) held 64 MiB of memory per hash in flight, a third of the service's
 * resident memory for each concurrent login. Hashes made with other parameters still verify: each
 * hash names its own.
 */
const ARGON2_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export class AuthService {
  /** Verified against when the email is unknown, so both failures take the same time; made on first need. */
  #decoyHash: Promise<string> | undefined;

  constructor(
    private readonly accounts: AuthRepository,
    private readonly tokens: AccessTokens,
  ) {}

  async register(email: string, password: string): Promise<Session> {
    const user = await this.accounts.insertUser(
      { id: newId('user'), email, passwordHash: await argon2.hash(password, ARGON2_OPTIONS), createdAt: new Date() },
      () => conflict('email_taken', 'A user with this email already exists.', 'email'),
    );
    return this.startSession(user.id, newId('refreshToken'));
  }

  async login(email: string, password: string): Promise<Session> {
    const user = await this.accounts.findUserByEmail(email);
    const valid = await argon2.verify(user?.passwordHash ?? (await this.decoyHash()), password);
    if (!user || !valid) throw new AppError('invalid_credentials');
    // A hash made with older parameters is replaced at the next login, so every account verifies
    // at the same cost as the decoy (the time of a failed login says nothing about the email).
    if (argon2.needsRehash(user.passwordHash, ARGON2_OPTIONS)) {
      await this.accounts.setPasswordHash(user.id, await argon2.hash(password, ARGON2_OPTIONS));
    }
    return this.startSession(user.id, newId('refreshToken'));
  }

  private decoyHash(): Promise<string> {
    this.#decoyHash ??= argon2.hash('decoy password for timing', ARGON2_OPTIONS).catch((error: unknown) => {
      this.#decoyHash = undefined; // not cached: the next login tries again
      throw error;
    });
    return this.#decoyHash;
  }

  /**
   * Rotates a refresh token. A token that was already rotated is being replayed (stolen or a
   * race lost): the whole family is revoked, so the thief's and the owner's sessions both end.
   */
  async refresh(presented: string | undefined): Promise<Session> {
    if (!presented) throw new AppError('unauthorized', { message: 'No refresh token cookie.' });
    const token = await this.accounts.findRefreshToken(sha256Hex(presented));
    if (!token || token.revokedAt || token.expiresAt <= new Date() || (await this.accounts.familyRevoked(token.familyId))) {
      throw new AppError('unauthorized', { message: 'The refresh token is not valid.' });
    }
    if (!(await this.accounts.claimRefreshToken(token.id, new Date()))) {
      await this.revokeFamily(token.familyId);
      throw new AppError('unauthorized', { message: 'The refresh token was already used; the session is revoked.' });
    }
    return this.startSession(token.userId, token.familyId);
  }

  async logout(presented: string | undefined): Promise<void> {
    if (!presented) return;
    const token = await this.accounts.findRefreshToken(sha256Hex(presented));
    if (token) await this.revokeFamily(token.familyId);
  }

  async me(userId: string): Promise<User> {
    const user = await this.accounts.findUser(userId);
    if (!user) throw new AppError('unauthorized');
    return user;
  }

  private async revokeFamily(familyId: string): Promise<void> {
    await this.accounts.revokeFamily(familyId, new Date());
  }

  private async startSession(userId: string, familyId: string): Promise<Session> {
    const refreshToken = newOpaqueToken();
    const now = new Date();
    const refreshExpiresAt = new Date(now.getTime() + REFRESH_TOKEN_TTL_SECONDS * 1000);
    await this.accounts.insertRefreshToken({
      id: newId('refreshToken'),
      userId,
      familyId,
      tokenHash: sha256Hex(refreshToken),
      expiresAt: refreshExpiresAt,
      rotatedAt: null,
      revokedAt: null,
      createdAt: now,
    });
    return { ...(await this.tokens.issue(userId, now)), refreshToken, refreshExpiresAt };
  }
}
