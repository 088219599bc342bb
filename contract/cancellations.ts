import { z } from 'zod';
import { auth, authErrors, c } from './common.ts';
import { jobPartRetry } from './sync-jobs.ts';

export const cancellationsContract = c.router(
  {
    retry: jobPartRetry('cancellations', 'cancellation_id', {
      summary: 'Retry a failed or dead cancellation',
      description:
        'Resets the cancellation to pending and grants three automatic retries again; `attempts` keeps counting (audit and event `cancellation.retried`). Answers the sync job with its `cancellations`. Any other status answers 400 `sync_job_not_retryable`, so of concurrent retries exactly one succeeds. Another user\'s job or cancellation is 404.',
    }),
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);

const Count = z.number().int();

/** `GET /v1/reseller_stores/{id}/stats` → `cancellations`. */
export const CancellationStats = z
  .object({
    byStatus: z.object({ pending: Count, processing: Count, completed: Count, failed: Count, dead: Count }),
    byOutcome: z.object({ cancelled: Count, not_placed: Count, too_late: Count, unsupported: Count }).describe('Completed cancellations by outcome.'),
  })
  .describe('Cancellations of the store\'s sync jobs, by status and by outcome.');
