import { notFound } from '../shared/errors.ts';
import type { Page } from '../shared/paging.ts';
import type { EventRecord } from './entity.ts';
import type { EventFilters, EventRepository } from './repository.ts';

export type { EventFilters };

export class EventService {
  constructor(private readonly events: EventRepository) {}

  /** The user's events (those of their stores, and their endpoints' pings), newest first. */
  list(ownerId: string, filters: EventFilters): Promise<Page<EventRecord>> {
    return this.events.list(ownerId, filters);
  }

  async get(ownerId: string, id: string): Promise<EventRecord> {
    const event = await this.events.findOwned(ownerId, id);
    if (!event) throw notFound();
    return event;
  }
}

/** The event exactly as its deliveries carry it. */
export const presentEvent = (event: EventRecord): Record<string, unknown> => JSON.parse(event.payload) as Record<string, unknown>;
