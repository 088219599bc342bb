// The divergence list (order-changes.md): shown first across stores, and on a store's page.
import { html } from '/console/assets/preact-htm.js';
import { api, DIVERGENCES_PER_STORE, href, number, Status, When } from './lib.js';
import { retryJobPart, retryJobs } from './actions.js';

const DIVERGENCE_TYPES = {
  too_late: 'Cancelled too late: the supplier shipped',
  unsupported: 'Partial cancellation the supplier cannot do',
  supplier_cancelled: 'Cancelled by the supplier',
  stale: 'No tracking for a long time',
  cancellation_dead: 'Cancellation failed',
  job_dead: 'Order not placed (job dead)',
  fulfillment_dead: 'Tracking not delivered',
};

const detailText = (detail) => {
  if (detail === null || detail === undefined) return '—';
  if (typeof detail === 'string') return detail;
  return detail.message ?? detail.reason ?? JSON.stringify(detail);
};

/**
 * The divergence list (order-changes.md): what needs the reseller and could not be repaired.
 * `more`: the stores whose list was cut at DIVERGENCES_PER_STORE, said as such.
 */
export function DivergencesTable({ items, more = [], dir, action, showStore }) {
  const dismiss = (item) =>
    action.run('dismiss the divergence', async () => {
      await api('POST', `/v1/reseller_stores/${item.resellerStoreId}/divergences/${item.id}/dismiss`);
      return `Divergence dismissed: ${DIVERGENCE_TYPES[item.type] ?? item.type}.`;
    });
  const jobOf = (item) => ({ id: item.syncJobId, externalOrderId: item.externalOrderId });
  const retry = (item) => action.run('retry the job', () => retryJobs([jobOf(item)]));
  // A dead fulfillment or cancellation is the entry's subject: retried as its job page retries it.
  const retrySubject = (item, collection) => retryJobPart(action, jobOf(item), collection, item.subjectId);
  return html`
    <section aria-labelledby="divergences-heading">
      <h2 id="divergences-heading">Divergences (${number.format(items.length)}${more.length > 0 ? ' shown; more exist' : ''})</h2>
      <p class="muted">Where the supplier's side and the storefront disagree and the service could not repair it.</p>
      ${more.length > 0 && html`<p class="error" role="note">
        Not every open divergence is listed: only the newest ${number.format(DIVERGENCES_PER_STORE)} open divergences of each store are loaded,
        and ${more.map((id) => dir.storeName(id)).join(', ')} ${more.length === 1 ? 'has' : 'have'} more. Dismiss or resolve these to bring up the
        next ones, or list them all through the API: <code>GET /v1/reseller_stores/{id}/divergences</code> (<a href="/docs">API reference</a>).
      </p>`}
      <table class="cards">
        <caption class="visually-hidden">Open divergences, newest first</caption>
        <thead><tr>
          ${showStore && html`<th scope="col">Store</th>`}<th scope="col">Order</th><th scope="col">What</th><th scope="col">Since</th><th scope="col">Detail</th>
          <th scope="col"><span class="visually-hidden">Actions</span></th>
        </tr></thead>
        <tbody>
          ${items.map(
            (item) => html`<tr key=${item.id}>
              ${showStore && html`<td data-label="Store">${dir.storeName(item.resellerStoreId)}</td>`}
              <td data-label="Order">#${item.externalOrderId}</td>
              <td data-label="What"><${Status} status=${item.type} /> ${DIVERGENCE_TYPES[item.type] ?? ''}</td>
              <td data-label="Since"><${When} at=${item.since} /></td>
              <td data-label="Detail" class="error-text">${detailText(item.detail)}</td>
              <td class="row-actions">
                ${item.syncJobId && html`<a href=${href(`/jobs/${item.syncJobId}`)} class="row-link"
                  aria-label=${`Open job: ${DIVERGENCE_TYPES[item.type] ?? item.type}`}>Open job</a>`}
                ${item.type === 'job_dead' && item.syncJobId && html`<button type="button" onClick=${() => retry(item)} disabled=${action.busy !== null}>Retry job</button>`}
                ${item.type === 'fulfillment_dead' && item.syncJobId && html`<button type="button" onClick=${() => retrySubject(item, 'fulfillments')} disabled=${action.busy !== null}>Retry tracking</button>`}
                ${item.type === 'cancellation_dead' && item.syncJobId && html`<button type="button" onClick=${() => retrySubject(item, 'cancellations')} disabled=${action.busy !== null}>Retry cancellation</button>`}
                <button type="button" class="secondary" onClick=${() => dismiss(item)} disabled=${action.busy !== null}
                  aria-label=${`Dismiss the divergence ${DIVERGENCE_TYPES[item.type] ?? item.type}`}>Dismiss</button>
              </td>
            </tr>`,
          )}
        </tbody>
      </table>
    </section>`;
}
