import type { Platform } from '../orders/types.ts';
import { createCustomAdapter } from './custom.ts';
import type { HttpClientSettings } from './http.ts';
import type { StorePacer } from '../pacing/rates.ts';
import { createPlatformAAdapter } from './platform-a.ts';
import { createPlatformBAdapter } from './platform-b.ts';
import type { PlatformAdapter } from './types.ts';

export { PayloadError, PlatformError } from './types.ts';
export type { PlatformAdapter, StoreConnection } from './types.ts';
export { DEFAULT_PACING, type PacedStore, type PacingRate, type StorePacer } from '../pacing/rates.ts';

export interface PlatformAdapterOptions {
  /** Store base URL with a `{shopDomain}` placeholder, e.g. `http://127.0.0.1:4010/{shopDomain}`. */
  baseUrlTemplate?: string;
  /** Per request, including reading the response body. */
  timeoutMs?: number;
  /** Each store's turns (src/pacing/pacer.ts: shared by every process on the database). */
  pacer: StorePacer;
  /** A 429 asking to wait at most this long is waited out inside the call instead of thrown. */
  maxInlineRetryAfterMs?: number;
  /** The longest Retry-After honoured; a platform asking for more gets this. */
  maxRetryAfterMs?: number;
  /** Told about every finished platform call (for metrics). */
  observe?: HttpClientSettings['observe'];
  /** The undici dispatcher calls go through (the URL safety guard); undici's global one otherwise. */
  dispatcher?: HttpClientSettings['dispatcher'];
}

const DEFAULT_BASE_URL_TEMPLATE = 'https://{shopDomain}';
const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_INLINE_RETRY_AFTER_MS = 5_000;
const DEFAULT_MAX_RETRY_AFTER_MS = 10 * 60_000;

/** One adapter per platform; they share a pacer so each store is paced across all callers. */
export function createPlatformAdapters(options: PlatformAdapterOptions): Record<Platform, PlatformAdapter> {
  const settings: HttpClientSettings = {
    baseUrlTemplate: options.baseUrlTemplate ?? DEFAULT_BASE_URL_TEMPLATE,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxInlineRetryAfterMs: options.maxInlineRetryAfterMs ?? DEFAULT_MAX_INLINE_RETRY_AFTER_MS,
    maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS,
    pacer: options.pacer,
    ...(options.observe && { observe: options.observe }),
    ...(options.dispatcher && { dispatcher: options.dispatcher }),
  };
  if (!settings.baseUrlTemplate.includes('{shopDomain}')) {
    throw new RangeError(`baseUrlTemplate ${settings.baseUrlTemplate} has no {shopDomain} placeholder`);
  }
  if (!(settings.timeoutMs > 0)) throw new RangeError(`timeoutMs must be positive, got ${settings.timeoutMs}`);
  return {
    platform_a: createPlatformAAdapter(settings),
    platform_b: createPlatformBAdapter(settings),
    custom: createCustomAdapter(settings),
  };
}
