/**
 * The form in which line vendors and source store vendor tags are compared: NFKC (so composed and
 * decomposed accents, and fullwidth or other compatibility forms, are one), case-folded (upper then
 * lower case: 'ß' and 'SS' fold alike, as do 'ς' and 'Σ'), NFKC again (folding can decompose), trimmed.
 * The fold is applied twice: one round takes the capital sharp s 'ẞ' (U+1E9E) only to 'ß', which the
 * second takes to 'ss', as Unicode case folding does; every other code point is settled by the first.
 */
export function normaliseVendor(vendor: string): string {
  return fold(fold(vendor.normalize('NFKC'))).normalize('NFKC').trim();
}

const fold = (text: string): string => text.toUpperCase().toLowerCase();

/** Whether a line's vendor routes it to the source store with `vendorTag`: equal once normalised. */
export function vendorMatches(lineVendor: string, vendorTag: string): boolean {
  const tag = normaliseVendor(vendorTag);
  // A blank tag would otherwise claim every line that has no vendor.
  return tag !== '' && normaliseVendor(lineVendor) === tag;
}
