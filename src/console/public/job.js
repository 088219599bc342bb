// A job's page (#/jobs/{id}): its facts, attempts (with their request and response excerpts),
// fulfillments, cancellations, when a failed one's next automatic retry is due, and history.
import { html, useCallback, useEffect, useState } from '/console/assets/preact-htm.js';
import {
  Alert, api, ApiError, Due, Exchange, href, JOB_POLL_MS, Loading, number, plainWords, plural, RETRYABLE, Status, TRIGGERS, useAction, useLatest,
  usePolling, useViewHeading, When,
} from './lib.js';
import { retryJobPart, retryJobs } from './actions.js';

export function JobView({ jobId, dir, announce, setViewStore }) {
  const [job, setJob] = useState(null);
  const [attempts, setAttempts] = useState(null);
  const [history, setHistory] = useState(null);
  const [error, setError] = useState(null);
  const heading = useViewHeading(job ? `Job for order #${job.externalOrderId}` : 'Job');

  const latest = useLatest();

  const load = useCallback(async () => {
    // A poll sent before an action (a retry) that answers after the reload that follows it would
    // show the job as it was: only the newest answer is shown.
    const current = latest();
    try {
      // The job first, then what it has done: its attempts and history are read after its status, so
      // a page never shows a job completed beside its last attempt still in progress.
      const detail = await api('GET', `/v1/sync_jobs/${encodeURIComponent(jobId)}`);
      const [timeline, audit] = await Promise.all([
        api('GET', `/v1/sync_jobs/${encodeURIComponent(jobId)}/attempts`),
        api('GET', `/v1/audit_log?resource_id=${encodeURIComponent(jobId)}&limit=100`).catch(() => null),
      ]);
      if (!current()) return;
      setJob(detail);
      setAttempts(timeline.data);
      if (audit) setHistory(audit.data);
      setError(null);
    } catch (failure) {
      if (!current()) return;
      setError(failure instanceof ApiError && failure.status === 404 ? 'No job of yours has this id.' : plainWords(failure, 'load the job'));
    }
  }, [jobId]);
  usePolling(load, JOB_POLL_MS, [load]);
  // After an action, the store's counts (the picker's) are asked again at once too.
  const after = useCallback(() => {
    load();
    dir.loadStats();
  }, [load, dir.loadStats]);
  const action = useAction(announce, after);
  useEffect(() => {
    if (job) setViewStore(job.resellerStoreId);
  }, [job?.resellerStoreId]);

  const retryCancellation = (cancellation) => retryJobPart(action, job, 'cancellations', cancellation.id);
  const retryFulfillment = (fulfillment) => retryJobPart(action, job, 'fulfillments', fulfillment.id);

  return html`
    <section aria-labelledby="view-heading">
      <p class="breadcrumbs">${job ? html`<a href=${href(`/stores/${job.resellerStoreId}`)}>${dir.storeName(job.resellerStoreId)}</a> › job` : html`<a href="#/jobs">Jobs</a> › job`}</p>
      <h1 id="view-heading" tabindex="-1" ref=${heading}>${job ? `Job for order #${job.externalOrderId}` : 'Job'}</h1>
      <${Alert} text=${error ?? action.error} />
      ${!job && !error && html`<${Loading} what="the job" />`}
      ${job &&
      html`
        <dl class="facts">
          <dt>Status</dt><dd><span aria-live="polite"><${Status} status=${job.status} /></span></dd>
          <dt>Store</dt><dd><a href=${href(`/stores/${job.resellerStoreId}`)}>${dir.storeName(job.resellerStoreId)}</a></dd>
          <dt>Supplier</dt><dd><a href=${href('/jobs', { supplier: job.sourceStoreId })}>${dir.supplierName(job.sourceStoreId)}</a></dd>
          <dt>Attempts</dt><dd>${job.attempts}</dd>
          <dt>Supplier order</dt><dd>${job.sourceOrderId ?? '—'}</dd>
          <dt>Created</dt><dd><${When} at=${job.createdAt} /></dd>
          <dt>Updated</dt><dd><${When} at=${job.updatedAt} /></dd>
          ${job.completedAt && html`<dt>Completed</dt><dd><${When} at=${job.completedAt} /></dd>`}
          ${job.deadAt && html`<dt>Dead since</dt><dd><${When} at=${job.deadAt} /></dd>`}
          ${job.nextRetryAt && html`<dt>Next retry</dt><dd><${Due} at=${job.nextRetryAt} /></dd>`}
          ${job.supplierCancelledAt && html`<dt>Cancelled by the supplier</dt><dd><${When} at=${job.supplierCancelledAt} />${job.supplierCancelReason ? ` · ${job.supplierCancelReason}` : ''}</dd>`}
          ${job.errorMessage && html`<dt>Last error</dt><dd class="error-text">${job.errorMessage}</dd>`}
          <dt>Job id</dt><dd><code>${job.id}</code></dd>
        </dl>
        ${RETRYABLE.has(job.status) &&
        html`<div class="actions"><button type="button" onClick=${() => action.run('retry the job', () => retryJobs([job]))} disabled=${action.busy !== null}
          aria-busy=${action.busy === 'retry the job' ? 'true' : 'false'}>Retry this job</button></div>`}
        <h2>Attempts</h2>
        <${Timeline} attempts=${attempts} label="Attempts of the job, oldest first" result="sourceOrderId" resultLabel="Supplier order" />
        <h2>Fulfillments</h2>
        ${job.fulfillments.length === 0 && html`<p>No tracking received from the supplier yet.</p>`}
        ${job.fulfillments.map((fulfillment) => html`<${Fulfillment} key=${fulfillment.id} fulfillment=${fulfillment} busy=${action.busy} onRetry=${retryFulfillment} />`)}
        ${Array.isArray(job.cancellations) &&
        html`
          <h2>Cancellations</h2>
          ${job.cancellations.length === 0 && html`<p>The order was not cancelled.</p>`}
          ${job.cancellations.map(
            (cancellation) => html`<${Cancellation} key=${cancellation.id} cancellation=${cancellation} busy=${action.busy} onRetry=${retryCancellation} />`,
          )}`}
        <${History} entries=${history} />`}
    </section>`;
}

function Fulfillment({ fulfillment, busy, onRetry }) {
  const tracking = fulfillment.trackingNumbers.join(', ');
  return html`
    <section class="unit" aria-label=${`Fulfillment ${tracking || fulfillment.id}`}>
      <p>
        <${Status} status=${fulfillment.status} /> Tracking ${tracking || 'without a number'}
        ${fulfillment.trackingCompany ? ` (${fulfillment.trackingCompany})` : ''} · ${plural(fulfillment.attempts, 'attempt')} · received <${When} at=${fulfillment.createdAt} />
        ${fulfillment.nextRetryAt ? html` · next retry <${Due} at=${fulfillment.nextRetryAt} />` : ''}
      </p>
      ${fulfillment.trackingUrls?.length > 0 && html`<p>${fulfillment.trackingUrls.map((url) => (isWebLink(url) ? html`<a href=${url} rel="noreferrer noopener" target="_blank">${url}</a> ` : html`<span>${url}</span> `))}</p>`}
      ${fulfillment.errorMessage && html`<p class="error-text">${fulfillment.errorMessage}</p>`}
      <${Timeline} attempts=${fulfillment.timeline ?? null} label="Attempts of the fulfillment, oldest first" result="resellerFulfillmentId" resultLabel="Reseller fulfillment" />
      ${RETRYABLE.has(fulfillment.status) &&
      html`<div class="actions"><button type="button" onClick=${() => onRetry(fulfillment)} disabled=${busy !== null}>Retry this tracking</button></div>`}
    </section>`;
}

const SCOPES = { order: 'whole order', lines: 'some lines' };

/** A supplier's tracking URL is linked only when it is a web address: anything else (`javascript:`, `data:`) is shown as text. */
const isWebLink = (url) => /^https?:\/\//i.test(url);

function Cancellation({ cancellation, busy, onRetry }) {
  const lines = cancellation.lines ?? [];
  return html`
    <section class="unit" aria-label=${`Cancellation ${cancellation.id}`}>
      <dl class="facts">
        <dt>Status</dt><dd><${Status} status=${cancellation.status} /></dd>
        <dt>Outcome</dt><dd>${cancellation.outcome ? html`<${Status} status=${cancellation.outcome} />` : 'none yet'}</dd>
        <dt>Scope</dt><dd>${SCOPES[cancellation.scope] ?? cancellation.scope}</dd>
        <dt>Lines</dt><dd>${lines.length ? lines.map((line) => `${line.sku} × ${number.format(line.quantity)}`).join(', ') : '—'}</dd>
        <dt>Reason</dt><dd>${cancellation.reason ?? '—'}</dd>
        <dt>Attempts</dt><dd>${cancellation.attempts}</dd>
        <dt>Requested</dt><dd><${When} at=${cancellation.requestedAt} /></dd>
        ${cancellation.completedAt && html`<dt>Completed</dt><dd><${When} at=${cancellation.completedAt} /></dd>`}
        ${cancellation.nextRetryAt && html`<dt>Next retry</dt><dd><${Due} at=${cancellation.nextRetryAt} /></dd>`}
        ${cancellation.errorMessage && html`<dt>Last error</dt><dd class="error-text">${cancellation.errorMessage}</dd>`}
      </dl>
      ${RETRYABLE.has(cancellation.status) &&
      html`<div class="actions"><button type="button" onClick=${() => onRetry(cancellation)} disabled=${busy !== null}>Retry this cancellation</button></div>`}
      ${cancellation.timeline && html`<${Timeline} attempts=${cancellation.timeline} label="Attempts of the cancellation, oldest first" />`}
    </section>`;
}

/**
 * Attempts, oldest first, one line each: compact dates (ISO in the title), and an error that
 * repeats the previous attempt's is not written again.
 */
function Timeline({ attempts, label, result, resultLabel }) {
  const [open, setOpen] = useState(() => new Set());
  if (attempts === null) return html`<${Loading} what="attempts" />`;
  if (attempts.length === 0) return html`<p>No attempt yet: waiting for a worker.</p>`;
  const hasExchange = (attempt) => (attempt.request ?? attempt.response ?? null) !== null;
  const exchanges = attempts.some(hasExchange);
  const columns = 7 + (result ? 1 : 0) + (exchanges ? 1 : 0);
  const toggle = (key) =>
    setOpen((before) => {
      const after = new Set(before);
      if (after.has(key)) after.delete(key);
      else after.add(key);
      return after;
    });
  let runStart = null;
  return html`
    <table class="cards timeline">
      <caption class="visually-hidden">${label}</caption>
      <thead>
        <tr>
          <th scope="col">#</th><th scope="col">Trigger</th><th scope="col">Started</th><th scope="col">Duration</th>
          <th scope="col">Outcome</th><th scope="col">Platform status</th>${result && html`<th scope="col">${resultLabel}</th>`}<th scope="col">Error</th>
          ${exchanges && html`<th scope="col"><span class="visually-hidden">Request and response</span></th>`}
        </tr>
      </thead>
      <tbody>
        ${attempts.map((attempt, index) => {
          const previous = attempts[index - 1];
          const repeated = attempt.errorMessage && previous?.errorMessage === attempt.errorMessage;
          if (!repeated) runStart = attempt.attempt;
          const key = attempt.attempt ?? index;
          return html`
            <tr key=${key} class="attempt">
              <td data-label="Attempt">${attempt.attempt}</td>
              <td data-label="Trigger">${TRIGGERS[attempt.trigger] ?? attempt.trigger}</td>
              <td data-label="Started"><${When} at=${attempt.startedAt} /></td>
              <td data-label="Duration">${attempt.durationMs === null || attempt.durationMs === undefined ? '—' : `${number.format(attempt.durationMs)} ms`}</td>
              <td data-label="Outcome"><span class=${`outcome outcome-${attempt.outcome}`}>${attempt.outcome.replace('_', ' ')}</span></td>
              <td data-label="Platform status">${attempt.platformStatus ?? '—'}</td>
              ${result && html`<td data-label=${resultLabel}>${attempt[result] ?? '—'}</td>`}
              <td data-label="Error" class="error-text">
                ${repeated ? html`<span class="muted">same as attempt ${runStart}</span>` : attempt.errorMessage ?? '—'}
                ${attempt.nextRetryAt ? html`<br /><small>next retry <${Due} at=${attempt.nextRetryAt} /></small>` : ''}
              </td>
              ${exchanges && html`<td class="row-actions">${hasExchange(attempt) &&
                html`<button type="button" class="outline" aria-expanded=${open.has(key) ? 'true' : 'false'} onClick=${() => toggle(key)}
                  aria-label=${`Request and response of attempt ${attempt.attempt}`}>Request and response</button>`}</td>`}
            </tr>
            ${open.has(key) && html`<tr key=${`${key}-exchange`} class="exchange-row"><td colspan=${columns}><${Exchange} entry=${attempt} /></td></tr>`}`;
        })}
      </tbody>
    </table>`;
}

function History({ entries }) {
  if (!entries?.length) return null;
  return html`
    <h2>History</h2>
    <table class="cards">
      <caption class="visually-hidden">Audit log entries of the job, newest first</caption>
      <thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">By</th></tr></thead>
      <tbody>
        ${entries.map(
          (entry) => html`<tr key=${entry.id}>
            <td data-label="When"><${When} at=${entry.createdAt} /></td>
            <td data-label="Action"><code>${entry.action}</code></td>
            <td data-label="By">${entry.actorId}</td>
          </tr>`,
        )}
      </tbody>
    </table>`;
}
