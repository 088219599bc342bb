import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { migrate } from './migrate.ts';

export type Orm = MikroORM;

/**
 * Connects the ORM with these settings (the entities are the composition's: mikro-orm.config.ts,
 * src/entities.ts; src/database.ts connects the service's) and applies pending migrations (real
 * migration files, never schema sync).
 */
export async function openOrm(options: Options, clientUrl: string): Promise<Orm> {
  const orm = await MikroORM.init(options);
  try {
    await migrate(orm, clientUrl);
  } catch (error) {
    await orm.close();
    throw error;
  }
  return orm;
}
