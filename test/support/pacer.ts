import { connectOrm } from '../../src/database.ts';
import type { Orm } from '../../src/db/orm.ts';
import { sqlOf } from '../../src/db/sql.ts';
import type { Platform } from '../../src/orders/types.ts';
import { SharedPacer } from '../../src/pacing/pacer.ts';
import type { PacingRate } from '../../src/pacing/rates.ts';
import { createTestDatabase } from './database.ts';

export const UNPACED: PacingRate = { burst: 1_000, perSecond: 1_000 };

/**
 * Store pacing as the service keeps it (in PostgreSQL, src/pacing/), on a fresh database, for tests
 * that drive the platform adapters directly: `pacer(rates)` paces every platform `UNPACED` unless told.
 */
export async function startTestPacing(): Promise<{ pacer: (rates?: Partial<Record<Platform, PacingRate>>) => SharedPacer; close: () => Promise<void> }> {
  const orm: Orm = await connectOrm(await createTestDatabase(), 2);
  return {
    pacer: (rates = {}) => new SharedPacer(sqlOf(orm), { platform_a: UNPACED, platform_b: UNPACED, custom: UNPACED, ...rates }),
    close: () => orm.close(),
  };
}
