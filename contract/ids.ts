/**
 * The type prefix of every id the service makes (decisions.md): \`rst_0192f3…\`, a prefix and 32
 * lowercase hex digits (a UUIDv7 body, src/shared/ids.ts, or the same clock-first layout made in
 * SQL). Plain constants, no imports: the contract checks paging cursors against them.
 */
export const ID_PREFIXES = {
  user: 'usr',
  resellerStore: 'rst',
  sourceStore: 'sst',
  syncJob: 'job',
  apiKey: 'key',
  auditEntry: 'aud',
  fulfillment: 'ful',
  heldFulfillment: 'hfl',
  heldSupplierCancellation: 'hsc',
  refreshToken: 'rtk',
  reconciliation: 'rec',
  event: 'evt',
  webhookEndpoint: 'we',
  webhookDelivery: 'dlv',
  divergence: 'div',
  watchPass: 'wps',
  cancellation: 'can',
  orderCancellation: 'ocn',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** An id of \`kind\` as the service makes it: its prefix, \`_\` and 32 lowercase hex digits. */
export const idPattern = (kind: IdKind) => new RegExp(`^${ID_PREFIXES[kind]}_[0-9a-f]{32}$`);
