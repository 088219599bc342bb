// For integrators: webhook endpoints, their deliveries (with the event each carried) and retries,
// as an app portal shows them.
import { html, useCallback, useEffect, useState } from '/console/assets/preact-htm.js';
import {
  Alert, api, ApiError, cursorOf, Due, excerpt, href, listAll, Loading, number, PageSizePicker, Pager, plainWords, plural, POLL_MS, query, Status, useAction,
  useLatest, usePolling, useViewHeading, When,
} from './lib.js';

export function WebhooksView({ announce, reloads }) {
  const heading = useViewHeading('Webhook endpoints');
  const [endpoints, setEndpoints] = useState(null);
  const [error, setError] = useState(null);
  const load = useCallback(async () => {
    try {
      setEndpoints(await listAll('/v1/webhook_endpoints', 100));
      setError(null);
    } catch (failure) {
      setError(plainWords(failure, 'load the webhook endpoints'));
    }
  }, [reloads]);
  usePolling(load, POLL_MS, [load]);
  return html`
    <section aria-labelledby="view-heading">
      <h1 id="view-heading" tabindex="-1" ref=${heading}>Webhook endpoints</h1>
      <p class="muted">Where the service sends signed events about your stores. Create and change endpoints through the API (<a href="/docs">API reference</a>).</p>
      <${Alert} text=${error} />
      ${endpoints === null && !error && html`<${Loading} what="the endpoints" />`}
      ${endpoints?.length === 0 && html`<p>No webhook endpoint yet: <code>POST /v1/webhook_endpoints</code> creates one.</p>`}
      ${endpoints?.length > 0 &&
      html`<table class="cards">
        <caption class="visually-hidden">Webhook endpoints, newest first</caption>
        <thead><tr><th scope="col">Endpoint</th><th scope="col">Status</th><th scope="col">Events</th><th scope="col">Created</th></tr></thead>
        <tbody>
          ${endpoints.map(
            (endpoint) => html`<tr key=${endpoint.id}>
              <td data-label="Endpoint" class="error-text"><a href=${href(`/webhooks/${endpoint.id}`)}>${endpoint.url}</a>${endpoint.description ? html`<br /><small class="muted">${endpoint.description}</small>` : ''}</td>
              <td data-label="Status"><${Status} status=${endpoint.status} /></td>
              <td data-label="Events">${endpoint.enabledEvents.join(', ')}</td>
              <td data-label="Created"><${When} at=${endpoint.createdAt} /></td>
            </tr>`,
          )}
        </tbody>
      </table>`}
    </section>`;
}

const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'];

export function EndpointView({ endpointId, route, announce }) {
  const params = route.params;
  const status = params.get('status') ?? '';
  const path = `/webhooks/${endpointId}`;
  const [endpoint, setEndpoint] = useState(null);
  const [page, setPage] = useState(null);
  const [error, setError] = useState(null);
  const heading = useViewHeading('Webhook endpoint');

  const latest = useLatest();

  const load = useCallback(async () => {
    const current = latest();
    try {
      const id = encodeURIComponent(endpointId);
      const [found, deliveries] = await Promise.all([
        api('GET', `/v1/webhook_endpoints/${id}`),
        api('GET', `/v1/webhook_endpoints/${id}/deliveries${query({ status, ...cursorOf(params) })}`),
      ]);
      if (!current()) return;
      setEndpoint(found);
      setPage(deliveries);
      setError(null);
    } catch (failure) {
      if (!current()) return;
      setError(failure instanceof ApiError && failure.status === 404 ? 'No webhook endpoint of yours has this id.' : plainWords(failure, 'load the endpoint'));
    }
  }, [endpointId, String(params)]);
  usePolling(load, POLL_MS, [load]);
  const action = useAction(announce, load);

  const setStatus = (next) =>
    action.run(next === 'enabled' ? 'enable the endpoint' : 'disable the endpoint', async () => {
      await api('PATCH', `/v1/webhook_endpoints/${endpoint.id}`, { status: next });
      return next === 'enabled' ? 'Endpoint enabled: new events will be sent to it.' : 'Endpoint disabled: it receives nothing until enabled again.';
    });
  const sendTest = () =>
    action.run('send a test event', async () => {
      await api('POST', `/v1/webhook_endpoints/${endpoint.id}/test`);
      return 'Test event (ping) queued: its delivery is at the top of the list.';
    });
  const retry = (delivery) =>
    action.run('retry the delivery', async () => {
      await api('POST', `/v1/webhook_endpoints/${endpoint.id}/deliveries/${delivery.id}/retry`);
      return `Delivery of ${delivery.eventType} retried; it is pending again.`;
    });

  const base = Object.fromEntries([...params].filter(([key]) => key !== 'after' && key !== 'before' && key !== 'status'));
  return html`
    <section aria-labelledby="view-heading">
      <p class="breadcrumbs"><a href="#/webhooks">Webhook endpoints</a> › endpoint</p>
      <h1 id="view-heading" tabindex="-1" ref=${heading}>Webhook endpoint</h1>
      <${Alert} text=${error ?? action.error} />
      ${!endpoint && !error && html`<${Loading} what="the endpoint" />`}
      ${endpoint &&
      html`
        <dl class="facts">
          <dt>URL</dt><dd class="error-text"><code>${endpoint.url}</code></dd>
          <dt>Status</dt><dd><${Status} status=${endpoint.status} />${endpoint.disabledReason ? ` · ${endpoint.disabledReason}` : ''}</dd>
          <dt>Events</dt><dd>${endpoint.enabledEvents.join(', ')}</dd>
          ${endpoint.description && html`<dt>Description</dt><dd>${endpoint.description}</dd>`}
          <dt>Created</dt><dd><${When} at=${endpoint.createdAt} /></dd>
          <dt>Updated</dt><dd><${When} at=${endpoint.updatedAt} /></dd>
          <dt>Endpoint id</dt><dd><code>${endpoint.id}</code></dd>
        </dl>
        <div class="actions">
          ${endpoint.status === 'disabled'
            ? html`<button type="button" onClick=${() => setStatus('enabled')} disabled=${action.busy !== null}>Enable</button>`
            : html`<button type="button" class="secondary" onClick=${() => setStatus('disabled')} disabled=${action.busy !== null}>Disable</button>
                <button type="button" class="secondary" onClick=${sendTest} disabled=${action.busy !== null}>Send a test event</button>`}
        </div>
        <h2>Deliveries</h2>
        <nav aria-label="Deliveries by status" class="status-filter">
          <ul>
            ${['', ...DELIVERY_STATUSES].map(
              (choice) => html`<li><a href=${href(path, choice ? { ...base, status: choice } : base)} aria-current=${choice === status ? 'page' : undefined}>${choice || 'all'}</a></li>`,
            )}
          </ul>
        </nav>
        ${page?.data.length === 0 && html`<p>No ${status} delivery${params.has('after') || params.has('before') ? ' on this page' : ' yet'}.</p>`}
        ${page?.data.length > 0 && html`<${Deliveries} deliveries=${page.data} busy=${action.busy} onRetry=${retry} />`}
        <div class="list-footer">
          <${Pager} page=${page} params=${params} path=${path} label="Pages of deliveries" />
          <${PageSizePicker} params=${params} path=${path} id="deliveries-page-size" />
        </div>`}
    </section>`;
}

function Deliveries({ deliveries, busy, onRetry }) {
  const [open, setOpen] = useState(() => new Set());
  const toggle = (id) =>
    setOpen((before) => {
      const after = new Set(before);
      if (after.has(id)) after.delete(id);
      else after.add(id);
      return after;
    });
  return html`
    <table class="cards deliveries">
      <caption class="visually-hidden">Deliveries to the endpoint, newest first</caption>
      <thead><tr>
        <th scope="col">Event</th><th scope="col">Status</th><th scope="col">Last attempt</th>
        <th scope="col">Answer</th><th scope="col">Next attempt</th><th scope="col"><span class="visually-hidden">Actions</span></th>
      </tr></thead>
      <tbody>
        ${deliveries.map(
          (delivery) => html`
            <tr key=${delivery.id} class="delivery">
              <td data-label="Event"><code>${delivery.eventType}</code><br /><small class="muted id">${delivery.eventId}</small></td>
              <td data-label="Status"><${Status} status=${delivery.status} /><br /><small class="muted">${plural(delivery.attempts, 'attempt')}</small></td>
              <td data-label="Last attempt"><${When} at=${delivery.lastAttemptAt} />${delivery.durationMs !== null ? html`<br /><small class="muted">${number.format(delivery.durationMs)} ms</small>` : ''}</td>
              <td data-label="Answer" class="answer">${delivery.lastResponseStatus ?? 'no answer'}${delivery.lastError ? html`<br /><small class="error-text">${delivery.lastError}</small>` : ''}</td>
              <td data-label="Next attempt">${delivery.status === 'pending' ? html`<${Due} at=${delivery.nextAttemptAt} />` : '—'}</td>
              <td class="row-actions">
                <button type="button" class="outline" aria-expanded=${open.has(delivery.id) ? 'true' : 'false'} aria-controls=${`payload-${delivery.id}`}
                  onClick=${() => toggle(delivery.id)} aria-label=${`Payload of ${delivery.eventType} ${delivery.eventId}`}>Payload</button>
                ${delivery.status === 'failed' && html`<button type="button" onClick=${() => onRetry(delivery)} disabled=${busy !== null}
                  aria-label=${`Retry the delivery of ${delivery.eventType} ${delivery.eventId}`}>Retry</button>`}
              </td>
            </tr>
            ${open.has(delivery.id) && html`<tr key=${`${delivery.id}-payload`} class="payload-row" id=${`payload-${delivery.id}`}>
              <td colspan="6"><${EventPayload} eventId=${delivery.eventId} /></td>
            </tr>`}`,
        )}
      </tbody>
    </table>`;
}

/** The event a delivery carried, as GET /v1/events/{id} returns it. */
function EventPayload({ eventId }) {
  const [payload, setPayload] = useState(null);
  useEffect(() => {
    api('GET', `/v1/events/${encodeURIComponent(eventId)}`).then(
      ({ request_id: _requestId, ...found }) => setPayload(excerpt(found, 8000)),
      (failure) => setPayload(plainWords(failure, 'load the event')),
    );
  }, [eventId]);
  if (payload === null) return html`<p aria-busy="true">Loading the event…</p>`;
  return html`<pre tabindex="0" aria-label=${`Event ${eventId}`}>${payload}</pre>`;
}
