import { z } from 'zod';
import { auth, authErrors, c, errorResponse } from './common.ts';
import { SyncJob } from './sync-jobs.ts';

export const fulfillmentsContract = c.router(
  {
    retry: {
      method: 'POST',
      path: '/v1/sync_jobs/:id/fulfillments/:fulfillment_id/retry',
      pathParams: z.object({ id: z.string().min(1).max(64), fulfillment_id: z.string().min(1).max(64) }),
      body: c.noBody(),
      responses: { 200: SyncJob, 400: errorResponse(400), 404: errorResponse(404) },
      summary: 'Retry a failed or dead fulfillment',
      description:
        'Pushes the tracking to the storefront again: resets the fulfillment to pending and grants three automatic retries again; `attempts` keeps counting (audit `fulfillment.retried`). Its completion resolves the job\'s `fulfillment_dead` entry. Answers the sync job with its `fulfillments`. Any other status answers 400 `sync_job_not_retryable`, so of concurrent retries exactly one succeeds. Another user\'s job or fulfillment is 404.',
    },
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
