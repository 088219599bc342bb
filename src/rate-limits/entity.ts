import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * A fixed-window request counter shared by every API process (src/rate-limits/repository.ts):
 * the auth endpoints per client, failed webhook signatures per client on a domain and failing domains
 * per client. UNLOGGED (see the migration): a crash that empties it only resets the current windows.
 */
export const RateLimitCounter = defineEntity({
  name: 'RateLimitCounter',
  tableName: 'rate_limit_counters',
  properties: {
    key: p.string().length(300).primary(),
    hits: p.integer(),
    resetsAt: p.datetime().index(),
  },
});
export type RateLimitCounter = InferEntity<typeof RateLimitCounter>;
