import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * An event for integrators (events.md), written in the same transaction as the change it reports
 * (src/events/outbox.ts). `payload` is the event exactly as it is delivered and listed: the bytes a
 * delivery signs are the same on every attempt.
 */
export const EventRecord = defineEntity({
  name: 'EventRecord',
  tableName: 'events',
  properties: {
    id: p.string().primary(),
    ownerId: p.string(),
    /** Null only for `ping`, which belongs to an endpoint rather than a store. */
    resellerStoreId: p.string().nullable(),
    type: p.string().length(64),
    payload: p.text(),
    createdAt: p.datetime(),
  },
  indexes: [
    { properties: ['ownerId', 'id'] },
    { properties: ['ownerId', 'type', 'id'] },
    { properties: ['resellerStoreId', 'id'] },
  ],
});
export type EventRecord = InferEntity<typeof EventRecord>;
