// Sync jobs: the table every view shares, the filtered and paged job list, a store's page,
// bulk retry and the search.
import { html, useCallback, useEffect, useMemo, useState } from '/console/assets/preact-htm.js';
import {
  Alert, Ago, api, ApiError, cursorOf, duration, FilterForm, href, isMissingRoute, JOB_STATUSES, loadDivergences, Loading, navigate, number, PageSizePicker,
  Pager, plainWords, plural, POLL_MS, query, RETRYABLE, Status, StoreSelect, SupplierSelect, useAction, useDraft, useLatest, usePolling, useViewHeading, When,
} from './lib.js';
import { bulkRetry, retryJobs } from './actions.js';
import { DivergencesTable } from './divergences.js';

const STATUS_CHOICES = { dead: ['dead'], failed: ['failed'], both: ['dead', 'failed'] };

/**
 * A storefront order id as POST /v1/sync_jobs takes it (contract/limits.ts EXTERNAL_ORDER_ID): digits
 * on platform_a and platform_b, but a custom storefront's are strings such as `SO-1001`.
 */
const ORDER_ID = /^[A-Za-z0-9_-]{1,32}$/;
/** The same for the filter's input (`pattern`, compiled by the browser with the `v` flag: `-` escaped). */
const ORDER_ID_PATTERN = '[A-Za-z0-9_\\-]{1,32}';

// ---------------------------------------------------------------------------------------------
// Retrying

/** Checked rows of a job table: ids, kept while the rows are shown. */
export function useSelection(jobs) {
  const [ids, setIds] = useState(() => new Set());
  const shown = jobs ?? [];
  const retryable = shown.filter((job) => RETRYABLE.has(job.status));
  const chosen = () => retryable.filter((job) => ids.has(job.id));
  return {
    has: (id) => ids.has(id),
    count: chosen().length,
    retryable,
    chosen,
    toggle: (id, on) =>
      setIds((before) => {
        const after = new Set(before);
        if (on) after.add(id);
        else after.delete(id);
        return after;
      }),
    setAll: (on) => setIds(on ? new Set(retryable.map((job) => job.id)) : new Set()),
    clear: () => setIds(new Set()),
  };
}

// ---------------------------------------------------------------------------------------------
// The table

export function JobsTable({ jobs, dir, showStore, selection, busy, onRetry, caption }) {
  const all = selection && selection.retryable.length > 0 && selection.count === selection.retryable.length;
  return html`
    <table class="cards jobs">
      <caption class="visually-hidden">${caption}</caption>
      <thead>
        <tr>
          ${selection && html`<th scope="col" class="pick">
            <input type="checkbox" aria-label="Select every retryable job shown" checked=${all}
              disabled=${selection.retryable.length === 0} onChange=${(e) => selection.setAll(e.currentTarget.checked)} />
          </th>`}
          <th scope="col">Order</th>${showStore && html`<th scope="col">Store</th>`}<th scope="col">Supplier</th><th scope="col">Status</th>
          <th scope="col">Attempts</th><th scope="col">Last error</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th>
        </tr>
      </thead>
      <tbody>
        ${jobs.map((job) => {
          const retryable = RETRYABLE.has(job.status);
          return html`<tr key=${job.id}>
            ${selection && html`<td class="pick">${retryable &&
              html`<input type="checkbox" aria-label=${`Select the job for order ${job.externalOrderId}`} checked=${selection.has(job.id)}
                onChange=${(e) => selection.toggle(job.id, e.currentTarget.checked)} />`}</td>`}
            <td data-label="Order"><a href=${href(`/jobs/${job.id}`)} aria-label=${`Job for order ${job.externalOrderId} at ${dir.supplierName(job.sourceStoreId)}`}>#${job.externalOrderId}</a></td>
            ${showStore && html`<td data-label="Store">${dir.storeName(job.resellerStoreId)}</td>`}
            <td data-label="Supplier">${dir.supplierName(job.sourceStoreId)}</td>
            <td data-label="Status"><${Status} status=${job.status} />${(job.deadAt ?? job.failedAt) && html` <small class="since"><${Ago} at=${job.deadAt ?? job.failedAt} /></small>`}</td>
            <td data-label="Attempts">${job.attempts}</td>
            <td data-label="Last error" class="error-text">${job.errorMessage ?? '—'}</td>
            <td data-label="Created"><${When} at=${job.createdAt} /></td>
            <td class="row-actions">
              ${retryable && html`<button type="button" onClick=${() => onRetry(job)} disabled=${busy !== null}
                aria-label=${`Retry the job for order ${job.externalOrderId}`}>Retry</button>`}
            </td>
          </tr>`;
        })}
      </tbody>
    </table>`;
}

// ---------------------------------------------------------------------------------------------
// A filtered, paged list of jobs; its filters and page are the URL's.

function JobsBrowser({ route, dir, path, fixedStore, announce, reloads }) {
  const params = route.params;
  const storeId = fixedStore ?? params.get('store') ?? '';
  const status = params.get('status') ?? '';
  const supplier = params.get('supplier') ?? '';
  const order = params.get('order') ?? '';
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);

  const latest = useLatest();

  const load = useCallback(async () => {
    const current = latest();
    try {
      const filters = { status, reseller_store_id: storeId, source_store_id: supplier, external_order_id: order };
      const found = await api('GET', `/v1/sync_jobs${query({ ...filters, ...cursorOf(params) })}`);
      if (!current()) return;
      setPage(found);
      setError(null);
    } catch (failure) {
      if (current()) setError(plainWords(failure, 'load the jobs'));
    }
  }, [String(params), storeId, reloads]);
  usePolling(load, POLL_MS, [load]);

  const after = useCallback(() => {
    load();
    dir.loadStats();
  }, [load, dir.loadStats]);
  const action = useAction(announce, after);
  const selection = useSelection(page?.data ?? null);
  const base = Object.fromEntries([...params].filter(([key]) => key !== 'after' && key !== 'before'));
  const counts = countsFor(dir, storeId, supplier || order);
  const retrySelected = () => action.run('retry the selected jobs', () => retryJobs(selection.chosen()).finally(selection.clear));

  return html`
    <section aria-labelledby="jobs-heading">
      <h2 id="jobs-heading">${status ? `${capitalised(status)} jobs` : 'All jobs'}${supplier ? ` of ${dir.supplierName(supplier)}` : ''}${order ? ` for order #${order}` : ''}</h2>
      <nav aria-label="Jobs by status" class="status-filter">
        <ul>
          ${['', ...JOB_STATUSES].map((choice) => {
            const { status: _status, ...rest } = base;
            const to = href(path, choice ? { ...rest, status: choice } : rest);
            return html`<li><a href=${to} aria-current=${choice === status ? 'page' : undefined}>${choice || 'all'}${counts ? ` (${number.format(choice ? counts[choice] : Object.values(counts).reduce((a, b) => a + b, 0))})` : ''}</a></li>`;
          })}
        </ul>
      </nav>
      <${JobFilters} dir=${dir} path=${path} base=${base} fixedStore=${fixedStore} />
      <${Alert} text=${error ?? action.error} />
      ${page === null && !error && html`<${Loading} what="jobs" />`}
      ${page?.data.length === 0 && html`<p>No job matches${params.has('after') || params.has('before') ? ' on this page' : ''}.</p>`}
      ${page?.data.length > 0 &&
      html`
        <div class="actions">
          <button type="button" onClick=${retrySelected} disabled=${action.busy !== null || selection.count === 0}
            aria-busy=${action.busy === 'retry the selected jobs' ? 'true' : 'false'}>Retry selected (${selection.count})</button>
        </div>
        <${JobsTable} jobs=${page.data} dir=${dir} showStore=${!fixedStore} selection=${selection} busy=${action.busy}
          onRetry=${(job) => action.run('retry the job', () => retryJobs([job]))} caption="Sync jobs, newest first" />`}
      <div class="list-footer">
        <${Pager} page=${page} params=${params} path=${path} label="Pages of jobs" />
        <${PageSizePicker} params=${params} path=${path} id="jobs-page-size" />
      </div>
    </section>`;
}

const capitalised = (text) => text.charAt(0).toUpperCase() + text.slice(1);

/** Counts by status for the status filter, when they describe the list (no supplier or order filter). */
function countsFor(dir, storeId, narrowed) {
  if (narrowed) return null;
  const stats = storeId ? [dir.stats[storeId]] : Object.values(dir.stats);
  if (stats.length === 0 || stats.some((s) => !s)) return null;
  return Object.fromEntries(JOB_STATUSES.map((status) => [status, stats.reduce((sum, s) => sum + s.syncJobs[status], 0)]));
}

function JobFilters({ dir, path, base, fixedStore }) {
  const [draft, change] = useDraft({ store: base.store ?? '', supplier: base.supplier ?? '', order: base.order ?? '' });
  const { store, supplier, order } = draft;
  const apply = () => navigate(href(path, { ...base, store: fixedStore ? undefined : store, supplier, order: order.trim() }));
  return html`
    <${FilterForm} label="Filter the jobs" onApply=${apply}>
      ${!fixedStore && html`<${StoreSelect} id="filter-store" dir=${dir} value=${store} onChange=${(value) => change({ store: value, supplier: '' })} />`}
      <${SupplierSelect} id="filter-supplier" dir=${dir} suppliers=${dir.suppliersOf(fixedStore ?? store)} storeId=${fixedStore ?? store} oneStore=${Boolean(fixedStore || store)}
        value=${supplier} onChange=${(value) => change({ supplier: value })} />
      <div class="inline-field"><label for="filter-order">Order number</label><input id="filter-order" pattern=${ORDER_ID_PATTERN} value=${order} onInput=${(e) => change({ order: e.currentTarget.value })} />
      </div>
    </${FilterForm}>`;
}

// ---------------------------------------------------------------------------------------------
// Bulk retry by status and supplier

function BulkRetryForm({ dir, storeId, action }) {
  const [status, setStatus] = useState('dead');
  const [picked, setSupplier] = useState('');
  const suppliers = dir.suppliersOf(storeId);
  // A supplier picked before the store changed (the jobs view keeps this form) is not one of the
  // store's: it would narrow the retry to nothing.
  const supplier = suppliers.some((s) => s.id === picked) ? picked : '';
  const submit = (event) => {
    event.preventDefault();
    const filters = { status: STATUS_CHOICES[status].length === 1 ? STATUS_CHOICES[status][0] : STATUS_CHOICES[status] };
    if (storeId) filters.reseller_store_id = storeId;
    if (supplier) filters.source_store_id = supplier;
    action.run('retry the matching jobs', () => bulkRetry(filters));
  };
  return html`
    <form class="bulk" onSubmit=${submit} aria-labelledby="bulk-heading">
      <h2 id="bulk-heading" class="small-heading">Retry in bulk</h2>
      <div class="filters">
        <div class="inline-field"><label for="bulk-status">Status</label><select id="bulk-status" value=${status} onChange=${(e) => setStatus(e.currentTarget.value)}>
            <option value="dead">dead</option><option value="failed">failed</option><option value="both">dead and failed</option>
          </select></div>
        <${SupplierSelect} id="bulk-supplier" dir=${dir} suppliers=${suppliers} storeId=${storeId} oneStore=${Boolean(storeId)} value=${supplier} onChange=${setSupplier} />
        <button type="submit" disabled=${action.busy !== null} aria-busy=${action.busy === 'retry the matching jobs' ? 'true' : 'false'}>Retry matching jobs</button>
      </div>
    </form>`;
}

// ---------------------------------------------------------------------------------------------
// Views

export function JobsView({ route, dir, announce, reloads }) {
  const heading = useViewHeading('Jobs');
  const [done, setDone] = useState(0);
  const after = useCallback(() => {
    dir.loadStats();
    setDone((count) => count + 1);
  }, [dir.loadStats]);
  const action = useAction(announce, after);
  return html`
    <section aria-labelledby="view-heading">
      <h1 id="view-heading" tabindex="-1" ref=${heading}>Jobs</h1>
      <p class="muted">Every sync job of your stores, newest first.</p>
      <${Alert} text=${action.error} />
      <${BulkRetryForm} dir=${dir} storeId=${route.params.get('store') ?? ''} action=${action} />
      <${JobsBrowser} route=${route} dir=${dir} path="/jobs" announce=${announce} reloads=${reloads + done} />
    </section>`;
}

export function StoreView({ storeId, route, dir, announce, reloads }) {
  const store = dir.store(storeId);
  const heading = useViewHeading(store?.name ?? 'Store');
  const stats = dir.stats[storeId] ?? null;
  const [divergences, setDivergences] = useState(undefined);
  const [done, setDone] = useState(0);
  const latest = useLatest();
  // After an action: the divergences asked before it are dropped, and asked again at once (`done`).
  const after = useCallback(() => {
    latest.invalidate();
    dir.loadStats();
    setDone((count) => count + 1);
  }, [dir.loadStats]);
  const action = useAction(announce, after);

  useEffect(() => {
    if (!store) return;
    const current = latest();
    loadDivergences([storeId]).then(
      (found) => current() && setDivergences(found),
      () => current() && setDivergences(null),
    );
  }, [storeId, Boolean(store), reloads, done]);

  const reconcile = () =>
    action.run('start a reconciliation', async () => {
      try {
        await api('POST', `/v1/reseller_stores/${storeId}/reconcile`, {});
        return 'Reconciliation started: orders whose webhooks were missed will be routed shortly.';
      } catch (failure) {
        if (isMissingRoute(failure)) return 'Reconciliation is not available on this service.';
        throw failure;
      }
    });

  if (dir.stores && !store) {
    return html`<section><h1 tabindex="-1" ref=${heading}>Store not found</h1><p>No active store of yours has this id. <a href="#/">Go to what needs attention</a>.</p></section>`;
  }
  return html`
    <section aria-labelledby="view-heading">
      <h1 id="view-heading" tabindex="-1" ref=${heading}>${store?.name ?? 'Store'}</h1>
      ${store && html`<p class="muted">${store.shopDomain} · ${store.platform} · <a href=${href('/audit', { store: storeId })}>Audit log of this store</a></p>`}
      <${Alert} text=${action.error} />
      ${stats === null ? html`<${Loading} what="the store's counts" />` : html`<${StatsView} stats=${stats} storeId=${storeId} />`}
      <div class="actions">
        <button type="button" class="secondary" onClick=${reconcile} disabled=${action.busy !== null}
          aria-busy=${action.busy === 'start a reconciliation' ? 'true' : 'false'}>Run reconciliation</button>
      </div>
      ${divergences?.items.length > 0 && html`<${DivergencesTable} items=${divergences.items} more=${divergences.more} dir=${dir} action=${action} showStore=${false} />`}
      <${BulkRetryForm} dir=${dir} storeId=${storeId} action=${action} />
      <${JobsBrowser} route=${route} dir=${dir} path=${`/stores/${storeId}`} fixedStore=${storeId} announce=${announce} reloads=${reloads + done} />
    </section>`;
}

/** Cancellations by status from the stats, whether as `cancellations.byStatus` or the counts themselves; null before the service has them. */
function cancellationCounts(cancellations) {
  if (!cancellations || typeof cancellations !== 'object') return null;
  const counts = cancellations.byStatus ?? cancellations;
  return typeof counts.pending === 'number' ? counts : null;
}

function StatsView({ stats, storeId }) {
  const rows = [...JOB_STATUSES, 'skipped'];
  const cancellations = cancellationCounts(stats.cancellations);
  return html`
    <div class="grid stats">
      <div class="scroll-x">
      <table>
        <caption>Counts by status</caption>
        <thead><tr><th scope="col">Status</th><th scope="col">Sync jobs</th><th scope="col">Fulfillments</th>
          ${cancellations && html`<th scope="col">Cancellations</th>`}</tr></thead>
        <tbody>
          ${rows.map(
            (status) => html`<tr>
              <th scope="row"><${Status} status=${status} /></th>
              <td>${status in stats.syncJobs ? html`<a href=${href(`/stores/${storeId}`, { status })}>${number.format(stats.syncJobs[status])}</a>` : html`<span aria-label="not applicable">—</span>`}</td>
              <td>${number.format(stats.fulfillments[status] ?? 0)}</td>
              ${cancellations && html`<td>${typeof cancellations[status] === 'number' ? number.format(cancellations[status]) : '—'}</td>`}
            </tr>`,
          )}
        </tbody>
      </table>
      </div>
      <dl>
        <dt>Oldest pending job</dt>
        <dd>${stats.oldestPendingSeconds === null ? 'none waiting' : `waiting ${duration(stats.oldestPendingSeconds)}`}</dd>
        <dt>Last order</dt>
        <dd><${Ago} at=${stats.lastOrderAt} never="no order yet" /></dd>
        <dt>Last reconciliation</dt>
        <dd><${Ago} at=${stats.lastReconciledAt} /></dd>
        ${stats.attention && html`<dt>Open divergences</dt><dd>${Object.entries(stats.attention).filter(([, n]) => n).map(([type, n]) => `${n} ${type.replaceAll('_', ' ')}`).join(', ') || 'none'}</dd>`}
      </dl>
    </div>`;
}

// ---------------------------------------------------------------------------------------------
// Search: an order number, a job id, or a supplier (name, vendor tag, domain or id)

export function SearchView({ route, dir, announce, reloads }) {
  const q = (route.params.get('q') ?? '').trim();
  const heading = useViewHeading(`Search: ${q}`);
  const [error, setError] = useState(null);
  const order = q.replace(/^#/, '');
  const kind = /^\d{1,20}$/.test(order) ? 'order' : /^job_/.test(q) ? 'job' : 'supplier';
  // Anything else that could be an order id (a custom storefront's `SO-1001`) is looked up as one
  // too: whether it has jobs (true), has none (false) or is being looked up (null).
  const [orderFound, setOrderFound] = useState(kind === 'order' ? true : kind === 'supplier' && ORDER_ID.test(order) ? null : false);
  useEffect(() => {
    if (orderFound !== null) return;
    api('GET', `/v1/sync_jobs${query({ external_order_id: order, limit: 1 })}`).then(
      (found) => setOrderFound(found.data.length > 0),
      () => setOrderFound(false),
    );
  }, [q]);

  useEffect(() => {
    if (kind !== 'job') return;
    api('GET', `/v1/sync_jobs/${encodeURIComponent(q)}`).then(
      (job) => navigate(href(`/jobs/${job.id}`), { replace: true }),
      (failure) => setError(failure instanceof ApiError && failure.status === 404 ? `No job of yours has the id ${q}.` : plainWords(failure, 'look the job up')),
    );
  }, [q]);

  const suppliers = useMemo(() => {
    if (kind !== 'supplier') return [];
    const needle = q.toLowerCase();
    return Object.values(dir.suppliers).filter(
      (s) => s.id === q || [s.name, s.vendorTag, s.shopDomain].some((field) => field.toLowerCase().includes(needle)),
    );
  }, [q, dir.suppliers]);

  return html`
    <section aria-labelledby="view-heading">
      <h1 id="view-heading" tabindex="-1" ref=${heading}>Search results for “${q}”</h1>
      <${Alert} text=${error} />
      ${kind === 'job' && !error && html`<${Loading} what="the job" />`}
      ${orderFound === true &&
      html`<p class="muted">Jobs of order #${order} in all your stores (one per supplier the order was routed to).</p>
        <${JobsBrowser} route=${{ ...route, params: new URLSearchParams({ order, ...Object.fromEntries([...route.params].filter(([k]) => k !== 'q')) }) }}
          dir=${dir} path="/jobs" announce=${announce} reloads=${reloads} />`}
      ${kind === 'supplier' && html`<${SupplierResults} suppliers=${suppliers} dir=${dir} q=${q} orderFound=${orderFound} />`}
    </section>`;
}

function SupplierResults({ suppliers, dir, q, orderFound }) {
  if (!dir.stores) return html`<${Loading} what="your suppliers" />`;
  if (suppliers.length === 0) {
    if (orderFound) return null;
    if (orderFound === null) return html`<${Loading} what="the order's jobs" />`;
    return html`<p>No supplier, order number or job id matches “${q}”. Search an order number, a job id (<code>job_…</code>) or part of a supplier's name, vendor tag or domain.</p>`;
  }
  return html`
    <h2>${plural(suppliers.length, 'supplier')}</h2>
    <table class="cards">
      <caption class="visually-hidden">Suppliers matching the search</caption>
      <thead><tr><th scope="col">Supplier</th><th scope="col">Store</th><th scope="col">Vendor tag</th><th scope="col">Jobs</th></tr></thead>
      <tbody>
        ${suppliers.map(
          (s) => html`<tr key=${s.id}>
            <td data-label="Supplier">${s.name}<br /><small class="muted">${s.shopDomain}</small></td>
            <td data-label="Store">${dir.storeName(s.resellerStoreId)}</td>
            <td data-label="Vendor tag">${s.vendorTag}</td>
            <td data-label="Jobs" class="links">
              <a href=${href('/jobs', { supplier: s.id })} aria-label=${`All jobs of ${s.name}`}>All jobs</a>
              <a href=${href('/jobs', { supplier: s.id, status: 'dead' })} aria-label=${`Dead jobs of ${s.name}`}>Dead</a>
              <a href=${href('/jobs', { supplier: s.id, status: 'failed' })} aria-label=${`Failed jobs of ${s.name}`}>Failed</a>
            </td>
          </tr>`,
        )}
      </tbody>
    </table>`;
}
