import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * One platform store's call allowance, shared by every process on the database (src/pacing/):
 * a token bucket kept as the time it would next be full (`nextAt`, GCRA's theoretical arrival time)
 * and the end of a pause a 429 asked for, and where the line of ordinary work waiting beyond the
 * booking horizon ends (`queuedUntil`, a second GCRA time: src/pacing/repository.ts). Keyed by the store's credential (platform, domain and
 * token, fingerprinted: src/attempts/store-connection.ts), never by its domain alone, so no tenant can
 * spend another's allowance, while records sharing a credential share the store's one bucket. The table is UNLOGGED (see the
 * migration): its rows are soon-stale timing, and a crash that empties it only costs one burst.
 */
export const StorePacing = defineEntity({
  name: 'StorePacing',
  tableName: 'store_pacing',
  properties: {
    storeId: p.string().length(64).primary(),
    nextAt: p.datetime(),
    pausedUntil: p.datetime().nullable(),
    queuedUntil: p.datetime().nullable(),
  },
});
export type StorePacing = InferEntity<typeof StorePacing>;
