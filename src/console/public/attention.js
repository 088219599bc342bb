// The first view: what needs attention across all the user's stores. Divergences (when the
// service has the list), dead and failed jobs, disabled webhook endpoints, and each store's counts.
import { html, useCallback, useState } from '/console/assets/preact-htm.js';
import {
  Alert, api, Ago, duration, href, listAll, LISTED_STORES, loadDivergences, Loading, number, plainWords, plural, POLL_MS, Status, useAction, useLatest, usePolling, useViewHeading, When,
} from './lib.js';
import { bulkRetry, retryJobs } from './actions.js';
import { DivergencesTable } from './divergences.js';
import { JobsTable, useSelection } from './jobs.js';

const SHOWN = 25;

export function AttentionView({ dir, announce, reloads }) {
  const heading = useViewHeading('Needs attention');
  const [jobs, setJobs] = useState(null);
  const [endpoints, setEndpoints] = useState(null);
  const [divergences, setDivergences] = useState(undefined);
  const [error, setError] = useState(null);
  const storeIds = (dir.stores ?? []).map((store) => store.id).join(',');

  const latest = useLatest();
  const load = useCallback(async () => {
    const current = latest();
    try {
      const [dead, failed, allEndpoints] = await Promise.all([
        api('GET', `/v1/sync_jobs?status=dead&limit=${SHOWN}`),
        api('GET', `/v1/sync_jobs?status=failed&limit=${SHOWN}`),
        listAll('/v1/webhook_endpoints', 100),
      ]);
      const open = dir.stores ? await loadDivergences(dir.stores.map((store) => store.id)) : undefined;
      // An answer older than the one shown, or requested before an action, would show what it changed.
      if (!current()) return;
      const failedAt = (job) => job.deadAt ?? job.failedAt ?? job.updatedAt;
      setJobs([...dead.data, ...failed.data].sort((a, b) => Date.parse(failedAt(b)) - Date.parse(failedAt(a))));
      setEndpoints(allEndpoints.filter((endpoint) => endpoint.status === 'disabled'));
      if (open) setDivergences(open);
      setError(null);
    } catch (failure) {
      if (current()) setError(plainWords(failure, 'load what needs attention'));
    }
  }, [storeIds, reloads]);
  usePolling(load, POLL_MS, [load]);

  // After an action: answers requested before it are dropped, and the view asks again at once.
  const after = useCallback(() => {
    latest.invalidate();
    load();
    dir.loadStats();
  }, [load, dir.loadStats]);
  const action = useAction(announce, after);

  const totals = Object.values(dir.stats).reduce(
    (sum, stats) => ({ dead: sum.dead + stats.syncJobs.dead, failed: sum.failed + stats.syncJobs.failed }),
    { dead: 0, failed: 0 },
  );
  // All clear only once the divergences are known too (they load once the stores have).
  const nothing = jobs?.length === 0 && endpoints?.length === 0 && divergences?.items.length === 0;
  return html`
    <section aria-labelledby="view-heading">
      <h1 id="view-heading" tabindex="-1" ref=${heading}>Needs attention</h1>
      <p class="muted">Across all your stores: what a supplier or an integrator is waiting on you for.</p>
      <${Alert} text=${error ?? action.error} />
      ${dir.stores?.length === 0 && html`<p>You have no reseller stores yet. Connect one through the API (<a href="/docs">API reference</a>).</p>`}
      ${nothing && html`<p class="all-clear">Nothing needs attention: no divergence, no dead or failed job, no disabled webhook endpoint.</p>`}
      ${divergences?.items.length > 0 && html`<${DivergencesTable} items=${divergences.items} more=${divergences.more} dir=${dir} action=${action} showStore=${true} />`}
      <${ProblemJobs} jobs=${jobs} totals=${totals} dir=${dir} action=${action} />
      <${DisabledEndpoints} endpoints=${endpoints} action=${action} />
      <${StoresTable} dir=${dir} />
    </section>`;
}

function ProblemJobs({ jobs, totals, dir, action }) {
  const selection = useSelection(jobs);
  if (jobs === null) return html`<${Loading} what="dead and failed jobs" />`;
  if (jobs.length === 0) return html`<section aria-labelledby="problems-heading"><h2 id="problems-heading">Dead and failed jobs</h2><p>No dead or failed jobs. Everything is moving.</p></section>`;
  const total = totals.dead + totals.failed;
  // Past LISTED_STORES the totals are of the listed stores only, while the bulk retry covers every store.
  const counted = !dir.storesCut;
  const retrySelected = () => action.run('retry the selected jobs', () => retryJobs(selection.chosen()).finally(selection.clear));
  const retryAllDead = () => action.run('retry the dead jobs', () => bulkRetry({ status: 'dead' }));
  return html`
    <section aria-labelledby="problems-heading">
      <h2 id="problems-heading">Dead and failed jobs</h2>
      <p class="muted">
        ${counted && total > jobs.length ? `The ${jobs.length} most recent of ${number.format(total)}. ` : ''}
        ${counted ? '' : `Counted in the first ${number.format(LISTED_STORES)} stores only; "Retry all dead jobs" retries those of every store. `}
        Dead jobs wait for you; failed ones will be retried automatically.${' '}
        <a href=${href('/jobs', { status: 'dead' })}>All dead jobs</a> · <a href=${href('/jobs', { status: 'failed' })}>All failed jobs</a>
      </p>
      <div class="actions">
        <button type="button" onClick=${retrySelected} disabled=${action.busy !== null || selection.count === 0}
          aria-busy=${action.busy === 'retry the selected jobs' ? 'true' : 'false'}>Retry selected (${selection.count})</button>
        <button type="button" class="secondary" onClick=${retryAllDead} disabled=${action.busy !== null || (counted && totals.dead === 0)}
          aria-busy=${action.busy === 'retry the dead jobs' ? 'true' : 'false'}>Retry all dead jobs${counted ? ` (${number.format(totals.dead)})` : ''}</button>
      </div>
      <${JobsTable} jobs=${jobs} dir=${dir} showStore=${true} selection=${selection} busy=${action.busy}
        onRetry=${(job) => action.run('retry the job', () => retryJobs([job]))}
        caption="Dead and failed sync jobs of all stores, most recent failure first" />
    </section>`;
}

function DisabledEndpoints({ endpoints, action }) {
  if (!endpoints?.length) return null;
  const enable = (endpoint) =>
    action.run('enable the webhook endpoint', async () => {
      await api('PATCH', `/v1/webhook_endpoints/${endpoint.id}`, { status: 'enabled' });
      return `Webhook endpoint ${endpoint.url} enabled: new events will be sent to it.`;
    });
  return html`
    <section aria-labelledby="endpoints-heading">
      <h2 id="endpoints-heading">Disabled webhook endpoints (${endpoints.length})</h2>
      <p class="muted">They receive no events until enabled again.</p>
      <table class="cards">
        <caption class="visually-hidden">Disabled webhook endpoints</caption>
        <thead><tr><th scope="col">Endpoint</th><th scope="col">Why</th><th scope="col">Since</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
        <tbody>
          ${endpoints.map(
            (endpoint) => html`<tr key=${endpoint.id}>
              <td data-label="Endpoint" class="error-text"><a href=${href(`/webhooks/${endpoint.id}`)}>${endpoint.url}</a>${endpoint.description ? html`<br /><small class="muted">${endpoint.description}</small>` : ''}</td>
              <td data-label="Why">${endpoint.disabledReason ?? 'Disabled through the API.'}</td>
              <td data-label="Since"><${When} at=${endpoint.updatedAt} /></td>
              <td class="row-actions">
                <button type="button" onClick=${() => enable(endpoint)} disabled=${action.busy !== null}
                  aria-label=${`Enable the webhook endpoint ${endpoint.url}`}>Enable</button>
              </td>
            </tr>`,
          )}
        </tbody>
      </table>
    </section>`;
}

function StoresTable({ dir }) {
  if (!dir.stores?.length) return null;
  return html`
    <section aria-labelledby="stores-heading">
      <h2 id="stores-heading">Stores</h2>
      ${dir.storesCut && html`<p class="notice">First ${number.format(LISTED_STORES)} stores shown; more exist. The counts here and in the store picker, and the divergences above, are of these stores only.</p>`}
      <table class="cards">
        <caption class="visually-hidden">Your reseller stores with their sync jobs by status</caption>
        <thead><tr>
          <th scope="col">Store</th><th scope="col">Dead</th><th scope="col">Failed</th><th scope="col">Pending</th>
          <th scope="col">Completed</th><th scope="col">Oldest pending</th><th scope="col">Last order</th>
        </tr></thead>
        <tbody>
          ${dir.stores.map((store) => {
            const stats = dir.stats[store.id];
            const count = (status) => (stats ? html`<a href=${href(`/stores/${store.id}`, { status })} aria-label=${`${plural(stats.syncJobs[status], `${status} job`)} in ${store.name}`}>${number.format(stats.syncJobs[status])}</a>` : '…');
            return html`<tr key=${store.id}>
              <td data-label="Store"><a href=${href(`/stores/${store.id}`)}>${store.name}</a><br /><small class="muted">${store.shopDomain}</small></td>
              <td data-label="Dead">${count('dead')}</td>
              <td data-label="Failed">${count('failed')}</td>
              <td data-label="Pending">${count('pending')}</td>
              <td data-label="Completed">${count('completed')}</td>
              <td data-label="Oldest pending">${stats ? (stats.oldestPendingSeconds === null ? 'none waiting' : `waiting ${duration(stats.oldestPendingSeconds)}`) : '…'}</td>
              <td data-label="Last order">${stats ? html`<${Ago} at=${stats.lastOrderAt} never="no order yet" />` : '…'}</td>
            </tr>`;
          })}
        </tbody>
      </table>
    </section>`;
}
