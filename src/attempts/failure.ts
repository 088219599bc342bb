import { PlatformError } from '../platforms/types.ts';
import { PricingError } from '../pricing/index.ts';

const MAX_MESSAGE_LENGTH = 500;

/** Expected failures keep their message; anything else is summarised without internals. */
export function failureMessage(error: unknown): string {
  const message =
    error instanceof PlatformError || error instanceof PricingError || error instanceof JobFailure
      ? error.message
      : `unexpected error: ${error instanceof Error ? error.name : 'unknown'}`;
  return message.length > MAX_MESSAGE_LENGTH ? `${message.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : message;
}

/** How long a platform asked us to wait before the next call (429 Retry-After), if it did. */
export function requestedDelayMs(error: unknown): number {
  return error instanceof PlatformError && error.retryAfterMs !== null ? error.retryAfterMs : 0;
}

/** A job that cannot be done as it stands (e.g. its store was deleted). */
export class JobFailure extends Error {}
