/**
 * The form in which line vendors and source store vendor tags are compared: NFKC (so composed and
 * decomposed accents, and fullwidth or other compatibility forms, are one), case-folded (upper then
 * lower case: 'ß' and 'SS' fold alike, as do 'ς' and 'Σ'), NFKC again (folding can decompose), trimmed.
 */
export function normaliseVendor(vendor: string): string {
  return vendor.normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC').trim();
}

/** Whether a line's vendor routes it to the source store with `vendorTag`: equal once normalised. */
export function vendorMatches(lineVendor: string, vendorTag: string): boolean {
  const tag = normaliseVendor(vendorTag);
  // A blank tag would otherwise claim every line that has no vendor.
  return tag !== '' && normaliseVendor(lineVendor) === tag;
}
