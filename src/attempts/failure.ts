import { PlatformError } from '../platforms/types.ts';
import { storableText } from '../shared/text.ts';

const MAX_MESSAGE_LENGTH = 500;

/**
 * Expected failures keep their message; anything else is summarised without internals. Always
 * storable (it is written to the row and its audit entry): a platform's or an order's text can
 * carry a NUL or half an emoji.
 */
export function failureMessage(error: unknown): string {
  const message =
    error instanceof PlatformError || error instanceof JobFailure
      ? error.message
      : `unexpected error: ${error instanceof Error ? error.name : 'unknown'}`;
  return storableText(message, MAX_MESSAGE_LENGTH);
}

/** How long a platform asked us to wait before the next call (429 Retry-After), if it did. */
export function requestedDelayMs(error: unknown): number {
  return error instanceof PlatformError && error.retryAfterMs !== null ? error.retryAfterMs : 0;
}

/**
 * Work that cannot be done as it stands (e.g. its store was deleted, or pricing refuses the order):
 * its message is kept. A kind turns its own expected failures into this one.
 */
export class JobFailure extends Error {}
