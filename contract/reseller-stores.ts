import { z } from 'zod';
import { FULFILLMENT_STATUSES, SYNC_JOB_STATUSES } from './enums.ts';
import { DIVERGENCE_TYPES } from './divergences.ts';
import { CancellationStats } from './cancellations.ts';
import {
  auth,
  authErrors,
  bodyErrors,
  c,
  errorResponse, IdParam,
  listOf,
  NameSchema,
  NullableTimestamp,
  openApi,
  pageQuery,
  PlatformSchema,
  RequestId,
  ShopDomainSchema,
  Timestamp,
} from './common.ts';

export const StoreCredentials = z.object({
  // Sent in a header of every call to the platform: a CR/LF or a character a header cannot carry
  // would make every job of the store fail, so it is refused here instead.
  accessToken: z
    .string()
    .min(1)
    .max(4096)
    .regex(/^[\x20-\x7e]+$/, 'must be printable ASCII (no control characters)')
    .describe('Write-only: the credential for the store on its platform. 1 to 4096 printable ASCII characters.'),
  webhookSecret: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[^\x00-\x1f\x7f-\x9f]+$/, 'must not contain control characters')
    .describe('Write-only: the secret the platform signs webhooks with. 1 to 1024 characters, no control characters.'),
});

const ResellerStoreFields = openApi(z.object({
  id: z.string(),
  ownerId: z.string(),
  name: z.string(),
  platform: PlatformSchema,
  shopDomain: z.string(),
  createdAt: Timestamp,
  deletedAt: NullableTimestamp,
}), { title: 'ResellerStoreSummary' });
const ResellerStore = openApi(ResellerStoreFields.extend({ request_id: RequestId }), { title: 'ResellerStore' });

/** One count per status of a resource's own list. */
const countsByStatus = <S extends string>(statuses: readonly [S, ...S[]]) =>
  z.object(Object.fromEntries(statuses.map((status) => [status, z.number().int()])) as Record<S, z.ZodNumber>);
const StatusCounts = openApi(countsByStatus(SYNC_JOB_STATUSES), { title: 'StatusCounts' });
/** Fulfillments have one status more than sync jobs: `skipped` (not sent, never retried). */
const FulfillmentStatusCounts = openApi(countsByStatus(FULFILLMENT_STATUSES), { title: 'FulfillmentStatusCounts' });
/** Open entries of the store's divergence list (its to-do list), one count per type. */
const DivergenceCounts = openApi(countsByStatus(DIVERGENCE_TYPES), { title: 'DivergenceCounts' });
const ResellerStoreStats = openApi(z.object({
  syncJobs: StatusCounts.describe('Sync jobs of the store by status.'),
  fulfillments: FulfillmentStatusCounts.describe('Fulfillments of the store by status, `skipped` included.'),
  oldestPendingSeconds: z.number().int().nullable().describe('How long the longest-waiting pending sync job has been pending; null when none is.'),
  lastOrderAt: NullableTimestamp.describe('When the newest sync job of the store was created (the last order routed).'),
  lastReconciledAt: NullableTimestamp.describe('When the last successful reconciliation of missed webhooks finished; null before the first.'),
  attention: DivergenceCounts.describe('Open divergences of the store (its to-do list, `GET …/divergences`) by type.'),
  cancellations: CancellationStats,
  request_id: RequestId,
}), { title: 'ResellerStoreStats' });

export const resellerStoresContract = c.router(
  {
    create: {
      method: 'POST',
      path: '/v1/reseller_stores',
      body: z
        .object({ name: NameSchema, platform: PlatformSchema, shopDomain: ShopDomainSchema })
        .merge(StoreCredentials)
        .strict(),
      responses: { 201: ResellerStore, 400: errorResponse(400), 409: errorResponse(409), ...bodyErrors },
      summary: 'Connect a reseller store',
      description:
        'Connects the storefront where customers order. `shopDomain` must not be used by another active reseller store (409 `shop_domain_taken`).',
    },
    list: {
      method: 'GET',
      path: '/v1/reseller_stores',
      query: pageQuery('resellerStore'),
      responses: { 200: listOf(ResellerStoreFields, 'ResellerStoreList'), 400: errorResponse(400) },
      summary: 'List reseller stores',
      description: 'Active reseller stores of the current user, newest first.',
    },
    get: {
      method: 'GET',
      path: '/v1/reseller_stores/:id',
      pathParams: IdParam,
      responses: { 200: ResellerStore, 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Get a reseller store',
      description: 'One reseller store of the current user, also after it was deleted.',
    },
    stats: {
      method: 'GET',
      path: '/v1/reseller_stores/:id/stats',
      pathParams: IdParam,
      responses: { 200: ResellerStoreStats, 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Reseller store stats',
      description:
        'Sync jobs and fulfillments of the store counted by status, the age of the oldest pending job, and the times of the last order and the last reconciliation. Counted in the database, fast whatever the number of jobs.',
    },
    update: {
      method: 'PATCH',
      path: '/v1/reseller_stores/:id',
      pathParams: IdParam,
      body: z.object({ name: NameSchema.optional() }).strict(),
      responses: { 200: ResellerStore, 400: errorResponse(400), 404: errorResponse(404), ...bodyErrors },
      summary: 'Rename a reseller store',
      description: 'Only the name can be updated.',
    },
    remove: {
      method: 'DELETE',
      path: '/v1/reseller_stores/:id',
      pathParams: IdParam,
      body: c.noBody(),
      responses: { 204: c.noBody(), 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Delete a reseller store',
      description:
        'Soft delete: the store stops accepting webhooks; its record, jobs and audit log are kept. Only the first DELETE deletes (and is audited); a later or concurrent one answers 404 and changes nothing.',
    },
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
