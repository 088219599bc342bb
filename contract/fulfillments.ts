import { auth, authErrors, c } from './common.ts';
import { jobPartRetry } from './sync-jobs.ts';

export const fulfillmentsContract = c.router(
  {
    retry: jobPartRetry('fulfillments', 'fulfillment_id', {
      summary: 'Retry a failed or dead fulfillment',
      description:
        'Pushes the tracking to the storefront again: resets the fulfillment to pending and grants three automatic retries again; `attempts` keeps counting (audit `fulfillment.retried`). Its completion resolves the job\'s `fulfillment_dead` entry. Answers the sync job with its `fulfillments`. Any other status answers 400 `sync_job_not_retryable`, so of concurrent retries exactly one succeeds. Another user\'s job or fulfillment is 404.',
    }),
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
