// Retrying jobs, one by one or in bulk, and a job's tracking or cancellation: shared by the attention
// view, the job lists, a job's page and the divergence list.
import { api, ApiError, number, PartlyDone, plainWords, plural } from './lib.js';

/** Retries each job as `POST /v1/sync_jobs/{id}/retry` does; says what happened. */
export async function retryJobs(jobs) {
  const refused = [];
  for (const job of jobs) {
    try {
      await api('POST', `/v1/sync_jobs/${job.id}/retry`);
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 401) throw failure;
      refused.push({ job, failure });
    }
  }
  const retried = jobs.length - refused.length;
  if (retried === 0 && refused.length > 0) throw refused[0].failure;
  const done =
    jobs.length === 1
      ? `${jobs[0].externalOrderId ? `Job for order ${jobs[0].externalOrderId}` : 'Job'} retried; it is pending again.`
      : `Retried ${plural(retried, 'job')}; they are pending again.`;
  if (refused.length === 0) return done;
  return `${done} ${plural(refused.length, 'job')} could not be retried: ${refused.map(({ job, failure }) => `${job.externalOrderId ? `order ${job.externalOrderId}` : `job ${job.id}`} (${plainWords(failure)})`).join('; ')}.`;
}

/**
 * Calls of the bulk retry endpoint one bulk retry makes at most (each retries up to 1,000 jobs):
 * past them it stops and says that more remain.
 */
export const BULK_RETRY_MAX_CALLS = 50;

/** Every matching job retried, 1,000 per call as the bulk retry endpoint takes them, up to BULK_RETRY_MAX_CALLS calls. */
export async function bulkRetry(filters) {
  let retried = 0;
  let more = false;
  const statuses = Array.isArray(filters.status) ? filters.status : [filters.status];
  // The retried jobs are pending, so each call gets the next ones.
  const what = statuses.join(' and ');
  const retriedSoFar = () => `Retried ${number.format(retried)} ${what} ${retried === 1 ? 'job; it is' : 'jobs; they are'} pending again.`;
  for (let calls = 0; calls < BULK_RETRY_MAX_CALLS; calls++) {
    let result;
    try {
      result = await api('POST', '/v1/sync_jobs/bulk_retry', filters);
    } catch (failure) {
      // A call failing after others retried jobs: the operator learns both, not only the error.
      if (retried === 0 || (failure instanceof ApiError && failure.status === 401)) throw failure;
      throw new PartlyDone(retriedSoFar(), 'retry the rest', failure);
    }
    retried += result.retried;
    more = result.has_more;
    if (!more) break;
  }
  const done = retriedSoFar();
  // Stopped at the cap with jobs still matching: said plainly, not reported as done.
  if (more) return `${done} More ${what} jobs remain, not retried: this retry stops after ${number.format(BULK_RETRY_MAX_CALLS)} calls. Run it again to retry the next ones.`;
  return retried === 0 ? `There were no ${what} jobs to retry.` : done;
}

/** What a job's part retried by hand is called: the action's name (`retry the …`) and its announcement. */
const JOB_PARTS = {
  fulfillments: { what: 'tracking', announced: 'Tracking' },
  cancellations: { what: 'cancellation', announced: 'Cancellation' },
};

/**
 * Retries a job's fulfillment or cancellation (`collection`: `fulfillments`, `cancellations`) as
 * `POST /v1/sync_jobs/{id}/{collection}/{partId}/retry` does, as the view's action (`useAction`):
 * named `retry the tracking` or `retry the cancellation`, it says what happened.
 */
export function retryJobPart(action, job, collection, partId) {
  const { what, announced } = JOB_PARTS[collection];
  return action.run(`retry the ${what}`, async () => {
    await api('POST', `/v1/sync_jobs/${job.id}/${collection}/${partId}/retry`);
    return `${announced}${job.externalOrderId ? ` of order ${job.externalOrderId}` : ''} retried; it is pending again.`;
  });
}
