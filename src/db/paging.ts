import type { EntityManager, EntityName, FilterQuery } from '@mikro-orm/postgresql';
import { validationFailed } from '../shared/errors.ts';
import type { Page, PageQuery } from '../shared/paging.ts';

/**
 * Cursor paging over time-sortable ids, newest first. `starting_after` walks to older items,
 * `ending_before` to newer ones; one extra row tells whether there is more in that direction.
 */
export async function findPage<T extends { id: string }>(
  em: EntityManager,
  entity: EntityName<T>,
  where: FilterQuery<T>,
  page: PageQuery,
): Promise<Page<T>> {
  if (page.starting_after !== undefined && page.ending_before !== undefined) {
    throw validationFailed('ending_before', 'Use either starting_after or ending_before, not both.');
  }
  const backwards = page.ending_before !== undefined;
  const cursor = backwards
    ? { id: { $gt: page.ending_before } }
    : page.starting_after !== undefined
      ? { id: { $lt: page.starting_after } }
      : {};
  const rows = await em.find(entity, { $and: [where, cursor] } as FilterQuery<T>, {
    orderBy: { id: backwards ? 'asc' : 'desc' } as never,
    limit: page.limit + 1,
  });
  const has_more = rows.length > page.limit;
  const data = rows.slice(0, page.limit);
  return { data: backwards ? data.reverse() : data, has_more };
}
