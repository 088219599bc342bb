import type { AppContext } from '../context.ts';
import { notFound } from '../shared/errors.ts';
import { findPage, type Page, type PageQuery } from '../shared/paging.ts';
import { EventRecord } from './entity.ts';

export interface EventFilters extends PageQuery {
  type?: string | undefined;
  reseller_store_id?: string | undefined;
  created_after?: string | undefined;
  created_before?: string | undefined;
}

export class EventService {
  constructor(private readonly ctx: AppContext) {}

  /** The user's events (those of their stores, and their endpoints' pings), newest first. */
  list(ownerId: string, filters: EventFilters): Promise<Page<EventRecord>> {
    const createdAt = {
      ...(filters.created_after !== undefined && { $gt: new Date(filters.created_after) }),
      ...(filters.created_before !== undefined && { $lt: new Date(filters.created_before) }),
    };
    return findPage(
      this.ctx.orm.em,
      EventRecord,
      {
        ownerId,
        ...(filters.type !== undefined && { type: filters.type }),
        ...(filters.reseller_store_id !== undefined && { resellerStoreId: filters.reseller_store_id }),
        ...(Object.keys(createdAt).length > 0 && { createdAt }),
      },
      filters,
    );
  }

  async get(ownerId: string, id: string): Promise<EventRecord> {
    const event = await this.ctx.orm.em.findOne(EventRecord, { id, ownerId });
    if (!event) throw notFound();
    return event;
  }
}

/** The event exactly as its deliveries carry it. */
export const presentEvent = (event: EventRecord): Record<string, unknown> => JSON.parse(event.payload) as Record<string, unknown>;
