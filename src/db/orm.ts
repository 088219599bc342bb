import { MikroORM } from '@mikro-orm/postgresql';
import { ormConfig } from '../../mikro-orm.config.ts';
import { migrate } from './migrate.ts';

export type Orm = MikroORM;

/** Connects the ORM and applies pending migrations (real migration files, never schema sync). */
export async function connectOrm(clientUrl: string, poolMax = 10): Promise<Orm> {
  const orm = await MikroORM.init(ormConfig(clientUrl, { pool: { min: 0, max: poolMax } }));
  try {
    await migrate(orm, clientUrl);
  } catch (error) {
    await orm.close();
    throw error;
  }
  return orm;
}
