import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * One refresh token of a session. Refreshing rotates: the presented token is marked rotated and
 * a new one joins the same family; presenting a rotated token again revokes the whole family.
 */
export const RefreshToken = defineEntity({
  name: 'RefreshToken',
  tableName: 'refresh_tokens',
  properties: {
    id: p.string().primary(),
    userId: p.string().index(),
    familyId: p.string().index(),
    /** SHA-256 of the opaque token; the token itself is never stored. */
    tokenHash: p.string().length(64).unique(),
    expiresAt: p.datetime(),
    rotatedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
    createdAt: p.datetime(),
  },
});
export type RefreshToken = InferEntity<typeof RefreshToken>;
