import { randomBytes } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';

const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 60 * 60;
const ISSUER = 'order-routing-service';
const AUDIENCE = 'order-routing-api';

export interface AccessToken {
  accessToken: string;
  expiresAt: number;
}

/** HS256 access tokens. The algorithm is pinned on verification, so `alg: none` or RS/HS confusion fails. */
export class AccessTokens {
  private readonly key: Uint8Array;

  constructor(secret: string) {
    this.key = new TextEncoder().encode(secret);
  }

  async issue(userId: string, now = new Date()): Promise<AccessToken> {
    const issuedAt = Math.floor(now.getTime() / 1000);
    const expiresAt = issuedAt + ACCESS_TOKEN_TTL_SECONDS;
    const accessToken = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(userId)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .sign(this.key);
    return { accessToken, expiresAt };
  }

  /** The user id of a valid token, or null for anything expired, forged or malformed. */
  async verify(token: string): Promise<string | null> {
    try {
      const { payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'], issuer: ISSUER, audience: AUDIENCE });
      return typeof payload.sub === 'string' ? payload.sub : null;
    } catch (error) {
      if (error instanceof errors.JOSEError || error instanceof TypeError) return null;
      throw error;
    }
  }
}

export function newOpaqueToken(): string {
  return randomBytes(32).toString('base64url');
}
