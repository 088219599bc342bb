import { ormConfig } from '../mikro-orm.config.ts';
import { openOrm, type Orm } from './db/orm.ts';

/** Connects the ORM to the service's database with every entity (src/entities.ts) and applies pending migrations. */
export function connectOrm(clientUrl: string, poolMax = 10): Promise<Orm> {
  return openOrm(ormConfig(clientUrl, { pool: { min: 0, max: poolMax } }), clientUrl);
}
