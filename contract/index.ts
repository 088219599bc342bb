import { apiKeysContract } from './api-keys.ts';
import { auditLogContract } from './audit-log.ts';
import { authContract } from './auth.ts';
import { c } from './common.ts';
import { divergencesContract } from './divergences.ts';
import { eventsContract } from './events.ts';
import { healthContract } from './health.ts';
import { reconciliationsContract } from './reconciliations.ts';
import { resellerStoresContract } from './reseller-stores.ts';
import { sourceStoresContract } from './source-stores.ts';
import { syncJobsContract } from './sync-jobs.ts';
import { cancellationsContract } from './cancellations.ts';
import { fulfillmentsContract } from './fulfillments.ts';
import { webhookEndpointsContract } from './webhook-endpoints.ts';
import { webhooksContract } from './webhooks.ts';

/** The whole API. The Express router and openapi.json are both generated from this. */
export const contract = c.router(
  {
    auth: authContract,
    apiKeys: apiKeysContract,
    resellerStores: resellerStoresContract,
    reconciliations: reconciliationsContract,
    divergences: divergencesContract,
    sourceStores: sourceStoresContract,
    syncJobs: syncJobsContract,
    cancellations: cancellationsContract,
    fulfillments: fulfillmentsContract,
    auditLog: auditLogContract,
    webhooks: webhooksContract,
    events: eventsContract,
    webhookEndpoints: webhookEndpointsContract,
    health: healthContract,
  },
  { strictStatusCodes: true },
);

export type Contract = typeof contract;
export { ERROR_CODES, ERROR_STATUS, type ErrorCode } from './errors.ts';
