import { z } from 'zod';
import {
  auth,
  authErrors,
  bodyErrors,
  c,
  errorResponse, listOf,
  NameSchema,
  NullableTimestamp,
  openApi,
  pageQuery,
  PlatformSchema,
  RequestId,
  ShopDomainSchema,
  Timestamp,
} from './common.ts';
import { PricingConfigSchema, PricingModeSchema } from './pricing.ts';
import { StoreCredentials } from './reseller-stores.ts';

const SourceStoreFields = openApi(z.object({
  id: z.string(),
  resellerStoreId: z.string(),
  name: z.string(),
  platform: PlatformSchema,
  shopDomain: z.string(),
  vendorTag: z.string(),
  pricingMode: PricingModeSchema,
  pricingConfig: PricingConfigSchema,
  createdAt: Timestamp,
  deletedAt: NullableTimestamp,
}), { title: 'SourceStoreSummary' });
const SourceStore = openApi(SourceStoreFields.extend({ request_id: RequestId }), { title: 'SourceStore' });

const StoreParam = z.object({ rst_id: z.string().min(1).max(64) });
const SourceStoreParams = StoreParam.extend({ id: z.string().min(1).max(64) });

const VendorTag = z.string().trim().min(1).max(200).describe('Matched against line-item vendors: exact after Unicode NFKC normalisation, case folding and trimming.');

export const sourceStoresContract = c.router(
  {
    create: {
      method: 'POST',
      path: '/v1/reseller_stores/:rst_id/source_stores',
      pathParams: StoreParam,
      body: z
        .object({
          name: NameSchema,
          platform: PlatformSchema,
          shopDomain: ShopDomainSchema,
          vendorTag: VendorTag,
          pricingMode: PricingModeSchema,
          pricingConfig: PricingConfigSchema,
        })
        .merge(StoreCredentials)
        .strict(),
      responses: { 201: SourceStore, 400: errorResponse(400), 404: errorResponse(404), 409: errorResponse(409), ...bodyErrors },
      summary: 'Add a source store (supplier)',
      description:
        '`pricingConfig.type` must equal `pricingMode`. `vendorTag` is unique among the reseller store\'s active source stores (409 `vendor_tag_taken`). Price rules `add` and `set` take at most 10^12 minor units; a price computed for a supplier whose line total would exceed that fails the sync job with the reason. A user has at most `MAX_SOURCE_STORES_PER_USER` active source stores (default 500; 409 `source_store_limit_reached` past it).',
    },
    list: {
      method: 'GET',
      path: '/v1/reseller_stores/:rst_id/source_stores',
      pathParams: StoreParam,
      query: pageQuery('sourceStore'),
      responses: { 200: listOf(SourceStoreFields, 'SourceStoreList'), 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'List source stores',
      description: 'Active source stores of a reseller store, newest first.',
    },
    get: {
      method: 'GET',
      path: '/v1/reseller_stores/:rst_id/source_stores/:id',
      pathParams: SourceStoreParams,
      responses: { 200: SourceStore, 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Get a source store',
      description: 'One source store, also after it was deleted.',
    },
    update: {
      method: 'PATCH',
      path: '/v1/reseller_stores/:rst_id/source_stores/:id',
      pathParams: SourceStoreParams,
      body: z
        .object({ name: NameSchema.optional(), pricingMode: PricingModeSchema.optional(), pricingConfig: PricingConfigSchema.optional() })
        .merge(StoreCredentials.partial())
        .strict(),
      responses: { 200: SourceStore, 400: errorResponse(400), 404: errorResponse(404), ...bodyErrors },
      summary: 'Update a source store',
      description:
        'Name and pricing can be changed. The pricing mode and config must agree: changing the mode requires a config of that type. A new `accessToken` or `webhookSecret` (write-only, validated as at creation) replaces the stored one: rotating a credential keeps the store, its id and its jobs, so an order it was routed is never routed again.',
    },
    remove: {
      method: 'DELETE',
      path: '/v1/reseller_stores/:rst_id/source_stores/:id',
      pathParams: SourceStoreParams,
      body: c.noBody(),
      responses: { 204: c.noBody(), 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Delete a source store',
      description:
        'Soft delete: `deletedAt` is set, the record is kept and no new orders are routed to it. Only the first DELETE deletes (and is audited); a later or concurrent one answers 404 and changes nothing.',
    },
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
