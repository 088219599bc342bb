import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

import { ID_PREFIXES, type IdKind } from '../../contract/ids.ts';

export type { IdKind };

/**
 * `rst_0192f3...`: a type prefix and a UUIDv7 body. UUIDv7 starts with the millisecond time and is
 * monotonic within a process, so ids sort by creation time and serve as paging cursors.
 */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${uuidv7().replaceAll('-', '')}`;
}

/**
 * The smallest id of a `kind` made at or after `at` (the body starts with the millisecond time, as
 * UUIDv7's first 48 bits), so "created before" is a range of the primary key.
 */
export function firstIdAt(kind: IdKind, at: Date): string {
  return `${ID_PREFIXES[kind]}_${at.getTime().toString(16).padStart(12, '0')}${'0'.repeat(20)}`;
}

/** `req_` and 32 hex digits: the id of a request whose caller sent none (or an unusable one). */
export function newRequestId(): string {
  return `req_${randomUUID().replaceAll('-', '')}`;
}
