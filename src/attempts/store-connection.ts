import type { AppContext } from '../context.ts';
import type { Platform } from '../orders/types.ts';
import type { StoreConnection } from '../platforms/types.ts';

interface StoreRow {
  id: string;
  platform: Platform;
  shopDomain: string;
  accessTokenEncrypted: string;
}

/**
 * Decrypts a store's token only for the call that needs it; it is never kept or logged. `heldTurns`:
 * how many of the store's turns the caller already waited for (src/attempts/pacing.ts), one per call.
 */
export function connectionOf(ctx: AppContext, store: StoreRow, heldTurns = 0): StoreConnection {
  return {
    storeId: store.id,
    platform: store.platform,
    shopDomain: store.shopDomain,
    accessToken: ctx.secrets.decrypt(store.accessTokenEncrypted, store.id),
    ...(heldTurns > 0 && { heldTurns: { remaining: heldTurns } }),
  };
}
