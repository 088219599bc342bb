import type { Platform } from '../../contract/enums.ts';
import type { SecretBox } from '../shared/secrets.ts';
import type { PacedStore } from '../pacing/rates.ts';
import type { StoreConnection } from '../platforms/types.ts';

interface StoreRow {
  id: string;
  platform: Platform;
  shopDomain: string;
  accessTokenEncrypted: string;
}

/** Allowance keys already worked out, by record and sealed token (a rotated token is a new entry). */
const allowanceKeys = new WeakMap<SecretBox, Map<string, string>>();
/** Entries kept per process at most; past it the cache starts over (a key costs one decryption). */
const MAX_CACHED_KEYS = 10_000;

/**
 * The key of the platform allowance a store record's calls spend (src/pacing/): its credential, the
 * platform, the shop domain and the access token, fingerprinted. Records that share a credential
 * (a supplier selling under two vendor tags, or sourced by two of a merchant's storefronts: one
 * record each) reach one store with one token, so they share the store's one bucket (platforms.md:
 * "the bucket is the store's, whoever calls"); a record of the same domain with another token (a
 * stranger's, which any user can type) spends an allowance of its own, never the real one's.
 */
export function allowanceKeyOf(secrets: SecretBox, platform: Platform, shopDomain: string, accessToken: string): string {
  return secrets.fingerprint(`${platform}\n${shopDomain.toLowerCase()}\n${accessToken}`);
}

function cachedAllowanceKey(secrets: SecretBox, store: StoreRow, accessToken?: string): string {
  let keys = allowanceKeys.get(secrets);
  if (!keys) allowanceKeys.set(secrets, (keys = new Map()));
  const cacheKey = `${store.id}\n${store.platform}\n${store.shopDomain}\n${store.accessTokenEncrypted}`;
  let key = keys.get(cacheKey);
  if (key === undefined) {
    key = allowanceKeyOf(secrets, store.platform, store.shopDomain, accessToken ?? secrets.decrypt(store.accessTokenEncrypted, store.id));
    if (keys.size >= MAX_CACHED_KEYS) keys.clear();
    keys.set(cacheKey, key);
  }
  return key;
}

/**
 * The allowance a call to the store spends (a worker reserves an attempt's turns with it before taking
 * the row). A token that cannot be decrypted spends the record's own allowance: the attempt fails in
 * `perform`, as it always did, rather than the worker's whole batch at its take.
 */
export function pacedStoreOf(ctx: { secrets: SecretBox }, store: StoreRow): PacedStore {
  try {
    return { storeId: cachedAllowanceKey(ctx.secrets, store), platform: store.platform };
  } catch {
    return { storeId: store.id, platform: store.platform };
  }
}

/** The turns of `calls` calls to the store (an attempt's `targets`): its allowance, worked out once. */
export function callsTo(ctx: { secrets: SecretBox }, store: StoreRow, calls: number): PacedStore[] {
  if (calls === 0) return [];
  return new Array<PacedStore>(calls).fill(pacedStoreOf(ctx, store));
}

/**
 * Decrypts a store's token only for the call that needs it; it is never kept or logged. `heldTurns`:
 * how many of the store's turns the caller already waited for (src/pacing/attempt-turns.ts), one per call.
 */
export function connectionOf(ctx: { secrets: SecretBox }, store: StoreRow, heldTurns = 0): StoreConnection {
  const accessToken = ctx.secrets.decrypt(store.accessTokenEncrypted, store.id);
  return {
    storeId: cachedAllowanceKey(ctx.secrets, store, accessToken),
    platform: store.platform,
    shopDomain: store.shopDomain,
    accessToken,
    ...(heldTurns > 0 && { heldTurns: { remaining: heldTurns } }),
  };
}
