import { normaliseVendor } from '../pricing/index.ts';
import type { SourceStoreRepository } from './repository.ts';

/** A supplier, as far as its twins are concerned. */
export interface TaggedSupplier {
  id: string;
  resellerStoreId: string;
  vendorTag: string;
}

/**
 * The other suppliers among `actives` whose vendor tag folds like `source`'s (src/pricing/vendor.ts),
 * sorted. Tags are unique among a reseller store's active suppliers once folded (409
 * `vendor_tag_taken`), but two stored before a fix of the fold can share one
 * (Migration20261127041900): every line one of them matches, the other matches too. Routing places
 * such a line on neither (src/orders/routing.ts); a job made by hand must not place it either.
 */
export function twinsAmong(source: TaggedSupplier, actives: readonly TaggedSupplier[]): string[] {
  const key = normaliseVendor(source.vendorTag);
  // A blank tag matches no line (vendorMatches), so it has no twin.
  if (key === '') return [];
  return actives
    .filter((other) => other.id !== source.id && other.resellerStoreId === source.resellerStoreId && normaliseVendor(other.vendorTag) === key)
    .map((other) => other.id)
    .sort();
}

/** The sync jobs' port `SupplierTwins` (src/sync-jobs/ports.ts), on the source stores' repository: one read of the reseller store's active suppliers. */
export const supplierTwins = (stores: Pick<SourceStoreRepository, 'activeOf'>) => ({
  async activeTwinsOf(source: TaggedSupplier): Promise<string[]> {
    return twinsAmong(source, await stores.activeOf(source.resellerStoreId));
  },
});
