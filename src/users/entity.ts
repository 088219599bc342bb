import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.string().primary(),
    /** Lower-cased: emails are unique case-insensitively. */
    email: p.string().length(320).unique(),
    passwordHash: p.text().hidden(),
    createdAt: p.datetime(),
  },
});
export type User = InferEntity<typeof User>;
