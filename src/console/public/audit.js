// The audit log (#/audit): read-only entries of the user's stores, newest first, paged, filtered
// by store and action.
import { html, useCallback, useEffect, useState } from '/console/assets/preact-htm.js';
import { Alert, api, cursorOf, excerpt, FilterForm, href, Loading, navigate, PageSizePicker, Pager, plainWords, query, StoreSelect, useDraft, useLatest, useViewHeading, When } from './lib.js';

/** Where an entry's resource has a page in the console. */
const RESOURCE_PAGES = {
  sync_job: (id) => href(`/jobs/${id}`),
  reseller_store: (id) => href(`/stores/${id}`),
  webhook_endpoint: (id) => href(`/webhooks/${id}`),
};

export function AuditView({ route, dir, reloads }) {
  const params = route.params;
  const store = params.get('store') ?? '';
  const actionFilter = params.get('action') ?? '';
  const heading = useViewHeading('Audit log');
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);

  const latest = useLatest();

  const load = useCallback(async () => {
    const current = latest();
    try {
      const found = await api('GET', `/v1/audit_log${query({ reseller_store_id: store, action: actionFilter, ...cursorOf(params) })}`);
      if (!current()) return;
      setPage(found);
      setError(null);
    } catch (failure) {
      if (current()) setError(plainWords(failure, 'load the audit log'));
    }
  }, [String(params), reloads]);
  useEffect(() => {
    load();
  }, [load]);

  return html`
    <section aria-labelledby="view-heading">
      <h1 id="view-heading" tabindex="-1" ref=${heading}>Audit log</h1>
      <p class="muted">What happened to your stores, newest first. Written only by the service.</p>
      <${AuditFilters} dir=${dir} store=${store} action=${actionFilter} params=${params} />
      <${Alert} text=${error} />
      ${page === null && !error && html`<${Loading} what="the audit log" />`}
      ${page?.data.length === 0 && html`<p>No entry matches.</p>`}
      ${page?.data.length > 0 &&
      html`<table class="cards audit">
        <caption class="visually-hidden">Audit log entries, newest first</caption>
        <thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">Resource</th><th scope="col">Store</th><th scope="col">By</th><th scope="col">Details</th></tr></thead>
        <tbody>
          ${page.data.map((entry) => {
            const link = RESOURCE_PAGES[entry.resourceType]?.(entry.resourceId);
            const hasDetails = entry.metadata && Object.keys(entry.metadata).length > 0;
            return html`<tr key=${entry.id}>
              <td data-label="When"><${When} at=${entry.createdAt} /></td>
              <td data-label="Action"><code>${entry.action}</code></td>
              <td data-label="Resource" class="error-text">${entry.resourceType.replaceAll('_', ' ')}<br /><small>${link ? html`<a href=${link}>${entry.resourceId}</a>` : entry.resourceId}</small></td>
              <td data-label="Store">${dir.storeName(entry.resellerStoreId)}</td>
              <td data-label="By" class="error-text">${entry.actorId}</td>
              <td data-label="Details">${hasDetails ? html`<details class="exchange"><summary>Metadata</summary><pre tabindex="0">${excerpt(entry.metadata)}</pre></details>` : '—'}</td>
            </tr>`;
          })}
        </tbody>
      </table>`}
      <div class="list-footer">
        <${Pager} page=${page} params=${params} path="/audit" label="Pages of the audit log" />
        <${PageSizePicker} params=${params} path="/audit" id="audit-page-size" />
      </div>
    </section>`;
}

function AuditFilters({ dir, store, action, params }) {
  const [draft, change] = useDraft({ store, action });
  const apply = () => navigate(href('/audit', { store: draft.store, action: draft.action.trim(), limit: params.get('limit') }));
  return html`
    <${FilterForm} label="Filter the audit log" onApply=${apply}>
      <${StoreSelect} id="audit-store" dir=${dir} value=${draft.store} onChange=${(value) => change({ store: value })} />
      <div class="inline-field"><label for="audit-action">Action</label><input id="audit-action" placeholder="e.g. sync_job.retried" value=${draft.action} onInput=${(e) => change({ action: e.currentTarget.value })} />
      </div>
    </${FilterForm}>`;
}
