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
 * Decrypts a store's token only for the call that needs it; it is never kept or logged. `heldTurn`:
 * the caller already waited for the store's turn (src/attempts/pacing.ts), which the first call spends.
 */
export function connectionOf(ctx: AppContext, store: StoreRow, heldTurn = false): StoreConnection {
  return {
    storeId: store.id,
    platform: store.platform,
    shopDomain: store.shopDomain,
    accessToken: ctx.secrets.decrypt(store.accessTokenEncrypted, store.id),
    ...(heldTurn && { heldTurn: { spent: false } }),
  };
}
