import type { Platform } from '../../contract/enums.ts';
import type { SecretBox } from '../shared/secrets.ts';
import type { StoreConnection } from '../platforms/types.ts';

interface StoreRow {
  id: string;
  platform: Platform;
  shopDomain: string;
  accessTokenEncrypted: string;
}

/**
 * Decrypts a store's token only for the call that needs it; it is never kept or logged. `heldTurns`:
 * how many of the store's turns the caller already waited for (src/pacing/attempt-turns.ts), one per call.
 */
export function connectionOf(ctx: { secrets: SecretBox }, store: StoreRow, heldTurns = 0): StoreConnection {
  return {
    storeId: store.id,
    platform: store.platform,
    shopDomain: store.shopDomain,
    accessToken: ctx.secrets.decrypt(store.accessTokenEncrypted, store.id),
    ...(heldTurns > 0 && { heldTurns: { remaining: heldTurns } }),
  };
}
