/** The form in which line vendors and source store vendor tags are compared: trimmed, lower case. */
export function normaliseVendor(vendor: string): string {
  return vendor.trim().toLowerCase();
}

/** Whether a line's vendor routes it to the source store with `vendorTag`: equal once normalised. */
export function vendorMatches(lineVendor: string, vendorTag: string): boolean {
  const tag = normaliseVendor(vendorTag);
  // A blank tag would otherwise claim every line that has no vendor.
  return tag !== '' && normaliseVendor(lineVendor) === tag;
}
