// The console's shared pieces: the public-API client, plain-words errors, the hash router,
// formatting and the small components every view uses. Plain ES module, no build step.
import { html, useCallback, useEffect, useLayoutEffect, useRef, useState } from '/console/assets/preact-htm.js';

export const POLL_MS = 5000;
export const JOB_POLL_MS = 2000;
export const PAGE_SIZES = [10, 25, 50, 100];
export const DEFAULT_PAGE_SIZE = 25;
export const JOB_STATUSES = ['pending', 'processing', 'completed', 'failed', 'dead'];
export const RETRYABLE = new Set(['failed', 'dead']);

// ---------------------------------------------------------------------------------------------
// API client: a JWT access token kept in memory, renewed through the refresh cookie
// (POST /v1/auth/refresh) when the API answers 401.

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(body?.error?.message ?? (status === 0 ? 'network error' : `HTTP ${status}`));
    this.status = status;
    this.code = body?.error?.code ?? (status === 0 ? 'network' : 'unknown');
    this.requestId = body?.request_id ?? null;
    this.retryAfter = retryAfter;
  }
}

/**
 * An action that failed after part of it was done (a bulk retry's third call answering 500): what
 * was done (`done`, a sentence), then what could not be (`rest`, as in `Could not …`) and why.
 */
export class PartlyDone extends Error {
  constructor(done, rest, failure) {
    super(failure.message);
    this.done = done;
    this.rest = rest;
    this.failure = failure;
  }
}

export const session = {
  token: null,
  refreshing: null,
  /** Called when the session cannot be renewed; the app goes back to the sign-in form. */
  onExpired: () => {},
};

export async function send(method, path, body, token) {
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin' });
  } catch {
    throw new ApiError(0, null, null);
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    // not JSON (a proxy's error page): the status says enough
  }
  if (!response.ok) throw new ApiError(response.status, data, response.headers.get('Retry-After'));
  return data;
}

/**
 * POST /v1/auth/refresh, one tab at a time: the refresh token rotates, and one presented again
 * (a second tab that read the cookie before the first tab's answer stored its successor) revokes
 * the whole session. Where the browser has no Web Locks (a page not served over HTTPS), unguarded.
 */
function renew() {
  const ask = () => send('POST', '/v1/auth/refresh');
  return globalThis.navigator?.locks ? navigator.locks.request('order-routing-console:refresh', ask) : ask();
}

/** The last refresh refused with 429, and until when (its Retry-After) it stands. */
let refused = null;

/**
 * One refresh at a time, however many calls found the token expired together: true when renewed,
 * false when there is no session any more (401). Any other failure (429 after too many sign-ins
 * from this address, 503, the network) is thrown: the session may well be valid, so the operator
 * is told what went wrong rather than signed out.
 */
export function refreshSession() {
  // Refused for too many attempts: asked again only after its Retry-After, as each ask would count
  // against the same per-address limit (every poll of every tab, keeping it, and the sign-ins of
  // others behind the same address, refused).
  if (refused && Date.now() < refused.until) return Promise.reject(refused.failure);
  session.refreshing ??= renew()
    .then(
      (renewed) => {
        refused = null;
        session.token = renewed.accessToken;
        return true;
      },
      (failure) => {
        if (failure instanceof ApiError && failure.status === 401) return false;
        if (failure instanceof ApiError && failure.status === 429) refused = { failure, until: Date.now() + (Number(failure.retryAfter) || 60) * 1000 };
        throw failure;
      },
    )
    .finally(() => {
      session.refreshing = null;
    });
  return session.refreshing;
}

/** An authenticated call; a 401 renews the access token once and tries again. */
export async function api(method, path, body) {
  try {
    return await send(method, path, body, session.token);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 401) throw error;
    // A refresh that could not be made now throws its own error (429, 503, network).
    if (!(await refreshSession())) {
      session.token = null;
      session.onExpired();
      throw error;
    }
    return send(method, path, body, session.token);
  }
}

/** A query string from the defined, non-empty values. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** Every item of a list endpoint, page after page (at most `max`). */
export async function listAll(path, max = 1000) {
  return (await listUpTo(path, max)).items;
}

/** Up to `max` items of a list endpoint, page after page, and whether more exist past them (`more`). */
export async function listUpTo(path, max) {
  const items = [];
  let after;
  for (;;) {
    const separator = path.includes('?') ? '&' : '?';
    const page = await api('GET', `${path}${separator}limit=100${after ? `&starting_after=${encodeURIComponent(after)}` : ''}`);
    items.push(...page.data);
    if (!page.has_more || page.data.length === 0) return { items, more: false };
    if (items.length >= max) return { items, more: true };
    after = page.data[page.data.length - 1].id;
  }
}

/** A route this service does not have (an older or newer service behind this page), as opposed to a missing resource. */
export const isMissingRoute = (error) => error instanceof ApiError && error.status === 404 && /^No route/.test(error.message);

/** What went wrong, in plain words, for people rather than programs. */
export function plainWords(error, doing) {
  if (error instanceof PartlyDone) return `${error.done} ${plainWords(error.failure, error.rest)}`;
  const prefix = doing ? `Could not ${doing}: ` : '';
  if (!(error instanceof ApiError)) return `${prefix}something unexpected happened in the page. Reload it and try again.`;
  switch (error.code) {
    case 'network':
      return `${prefix}the service could not be reached. Check your connection and try again.`;
    case 'invalid_credentials':
      return 'That email and password do not match an account. Check them and try again.';
    case 'unauthorized':
      return 'Your session has ended. Sign in again.';
    case 'rate_limited':
      return `${prefix}too many attempts in a short time. Wait ${error.retryAfter ? `${error.retryAfter} seconds` : 'a minute'} and try again.`;
    case 'unavailable':
      return `${prefix}the service is temporarily unavailable. Try again in a few seconds.`;
    case 'not_found':
      return `${prefix}it no longer exists, or it is not yours.`;
    case 'internal_error':
      return `${prefix}the service had a problem on its side.${error.requestId ? ` If it keeps happening, quote reference ${error.requestId}.` : ''}`;
    case 'validation_failed':
    case 'conflict':
      return `${prefix}${error.message}`;
    default:
      return error.status === 400 || error.status === 409 ? `${prefix}${error.message}` : `${prefix}${error.message} (HTTP ${error.status}).`;
  }
}

// ---------------------------------------------------------------------------------------------
// The hash router: #/path?query. Every view is a URL, so links can be shared and the back button
// walks the views; the service serves one page.

export function currentRoute() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, search = ''] = raw.split('?');
  return { path, parts: path.split('/').filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(search) };
}

export const href = (path, params = {}) => `#${path}${query(params)}`;

/** Goes to a view; `replace` keeps the back button from returning to where we were. */
export function navigate(to, { replace = false } = {}) {
  if (replace) location.replace(to);
  else location.hash = to.replace(/^#/, '');
}

export function useRoute() {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const changed = () => setRoute(currentRoute());
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}

/** The page size from the URL, one of PAGE_SIZES. */
export function pageSize(params) {
  const asked = Number(params.get('limit'));
  return PAGE_SIZES.includes(asked) ? asked : DEFAULT_PAGE_SIZE;
}

/** The list API's cursor parameters from the view's URL parameters. */
export const cursorOf = (params) => ({ limit: pageSize(params), starting_after: params.get('after'), ending_before: params.get('before') });

// ---------------------------------------------------------------------------------------------
// Hooks

/** Runs `load` now, whenever `deps` change, and every `everyMs` while the page is visible. */
export function usePolling(load, everyMs, deps) {
  useEffect(() => {
    let stopped = false;
    const tick = () => {
      if (!stopped && document.visibilityState === 'visible') load();
    };
    load();
    const timer = setInterval(tick, everyMs);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, deps);
}

/**
 * Answers in the order their requests were made: call it as a request starts, and the function it
 * returns when the answer lands, true if that answer may be shown (it is newer than the one shown).
 * An earlier page, filter or poll answering after a later one is dropped: otherwise the view showed
 * another page than its URL's, and its pager's links, made from the rows, skipped or repeated rows.
 * `invalidate()`, after an action (a retry, a dismiss), drops every answer requested before it: one
 * landing after the action showed what the action had just changed (a retried job dead again).
 */
export function useLatest() {
  const latest = useRef(null);
  if (latest.current === null) {
    const counter = { started: 0, shown: 0, floor: 0 };
    const start = () => {
      const mine = ++counter.started;
      return () => {
        if (mine <= counter.floor || mine < counter.shown) return false;
        counter.shown = mine;
        return true;
      };
    };
    start.invalidate = () => {
      counter.floor = counter.started;
    };
    latest.current = start;
  }
  return latest.current;
}

/** A view's heading takes focus when the view opens, so screen readers announce where they are. */
export function useViewHeading(title) {
  const heading = useRef(null);
  useEffect(() => {
    heading.current?.focus({ preventScroll: false });
  }, []);
  useEffect(() => {
    if (title) document.title = `${title} · Operator console`;
  }, [title]);
  return heading;
}

/** One action at a time: its name while it runs, its error in plain words, its result announced. */
export function useAction(announce, after) {
  const [busy, setBusy] = useState(null);
  const [error, setError] = useState(null);
  const run = useCallback(
    async (name, work) => {
      setBusy(name);
      setError(null);
      try {
        announce(await work());
      } catch (failure) {
        if (!(failure instanceof ApiError && failure.status === 401)) setError(plainWords(failure, name));
      } finally {
        setBusy(null);
        after?.();
      }
    },
    [announce, after],
  );
  return { busy, error, run, setError };
}

// ---------------------------------------------------------------------------------------------
// Formatting

export const number = new Intl.NumberFormat('en');
export const plural = (count, one, many = `${one}s`) => `${number.format(count)} ${count === 1 ? one : many}`;

export function duration(seconds) {
  if (seconds < 60) return `${Math.max(0, Math.round(seconds))} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} days`;
}

export const secondsSince = (iso) => (Date.now() - Date.parse(iso)) / 1000;

const SAME_YEAR = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
const OTHER_YEAR = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });

/** `25 Nov 18:07:31` (the year only when it is not this one), in the browser's time zone. */
export function compactDate(iso) {
  const date = new Date(iso);
  const format = date.getFullYear() === new Date().getFullYear() ? SAME_YEAR : OTHER_YEAR;
  return format.format(date).replace(',', '');
}

/** A date on one line; the exact ISO time in its title (and datetime) for whoever needs it. */
export function When({ at, none = '—' }) {
  if (!at) return html`<span>${none}</span>`;
  return html`<time class="when" datetime=${at} title=${at}>${compactDate(at)}</time>`;
}

export function Ago({ at, never = 'never' }) {
  if (!at) return html`<span>${never}</span>`;
  return html`<time class="when" datetime=${at} title=${at}>${duration(secondsSince(at))} ago</time>`;
}

/** In how long (or how long ago) a future time is due. */
export function Due({ at }) {
  if (!at) return html`<span>—</span>`;
  const seconds = -secondsSince(at);
  return html`<time class="when" datetime=${at} title=${at}>${compactDate(at)} (${seconds > 0 ? `in ${duration(seconds)}` : 'due now'})</time>`;
}

export function Status({ status }) {
  return html`<span class=${`badge badge-${status}`}>${String(status).replaceAll('_', ' ')}</span>`;
}

export const TRIGGERS = {
  initial: 'First attempt',
  automatic_retry: 'Automatic retry',
  manual_retry: 'Manual retry',
  recovered: 'Recovered after a lost worker',
};

/** Pretty JSON, cut at `max` characters so a large payload cannot swamp the page. */
export function excerpt(value, max = 4000) {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  if (text === undefined) return '';
  return text.length > max ? `${text.slice(0, max)}\n… (${number.format(text.length - max)} more characters)` : text;
}

// ---------------------------------------------------------------------------------------------
// Shared components

export function Alert({ text }) {
  return text ? html`<p class="error" role="alert">${text}</p>` : null;
}

export function Loading({ what }) {
  return html`<p aria-busy="true">Loading ${what}…</p>`;
}

/**
 * Newer/older links for a cursor-paged list, as the list API pages: `after` the last id walks to
 * older items, `before` the first id to newer ones. Links, so every page is a URL and Back works.
 */
export function Pager({ page, params, path, label }) {
  if (!page || page.data.length === 0) return null;
  const base = Object.fromEntries([...params].filter(([key]) => key !== 'after' && key !== 'before'));
  const backwards = params.has('before');
  const forwards = params.has('after');
  const hasOlder = backwards || page.has_more;
  const hasNewer = forwards || (backwards && page.has_more);
  if (!hasOlder && !hasNewer) return null;
  const first = page.data[0].id;
  const last = page.data[page.data.length - 1].id;
  return html`
    <nav class="pager" aria-label=${label}>
      ${hasNewer ? html`<a href=${href(path, base)} class="pager-link">Newest</a>` : null}
      ${hasNewer ? html`<a href=${href(path, { ...base, before: first })} class="pager-link" rel="prev">← Newer</a>` : null}
      ${hasOlder ? html`<a href=${href(path, { ...base, after: last })} class="pager-link" rel="next">Older →</a>` : null}
    </nav>`;
}

/** Rows per page: changing it starts again from the newest. */
export function PageSizePicker({ params, path, id }) {
  const change = (event) => {
    const base = Object.fromEntries([...params].filter(([key]) => key !== 'after' && key !== 'before'));
    navigate(href(path, { ...base, limit: event.currentTarget.value }));
  };
  return html`
    <div class="inline-field"><label for=${id}>Rows per page</label><select id=${id} value=${String(pageSize(params))} onChange=${change}>
        ${PAGE_SIZES.map((size) => html`<option value=${String(size)}>${size}</option>`)}
      </select>
    </div>`;
}

/**
 * An excerpt as an operator reads HTTP: `POST /orders` or `HTTP 503`, then the body, indented when
 * it is whole JSON (a body cut by the service is shown as it is).
 */
function exchangeText(value) {
  if (value === null || typeof value !== 'object') return excerpt(value);
  const head = value.method ? `${value.method} ${value.path}` : `HTTP ${value.status}`;
  let body = value.body;
  if (typeof body === 'string') {
    try {
      body = JSON.stringify(JSON.parse(body), null, 2);
    } catch {
      // Not JSON, or cut: shown as it came.
    }
  }
  return body === null || body === undefined ? head : `${head}\n\n${excerpt(body)}`;
}

/** Request and response excerpts of a timeline entry (redacted and bounded by the service); null ones show as none. */
export function Exchange({ entry }) {
  const part = (label, value) =>
    value === undefined || value === null
      ? html`<div><p class="label">${label}</p><p class="muted">none</p></div>`
      : html`<div><p class="label">${label}</p><pre tabindex="0" aria-label=${`${label} of attempt ${entry.attempt}`}>${exchangeText(value)}</pre></div>`;
  return html`<div class="exchange">${part('Request', entry.request)}${part('Response', entry.response)}</div>`;
}

// ---------------------------------------------------------------------------------------------
// The reseller's to-do list

/** Open divergences loaded per store, newest first: a store with more says so (`more`). */
export const DIVERGENCES_PER_STORE = 500;

/**
 * The open divergences of these stores (`items`), newest first, each with its `resellerStoreId`,
 * and the stores that have more than DIVERGENCES_PER_STORE (`more`, their ids): only their newest
 * are in `items`. A store deleted meanwhile (404) has none.
 */
export async function loadDivergences(storeIds) {
  if (storeIds.length === 0) return { items: [], more: [] };
  const lists = await Promise.all(
    storeIds.map((storeId) =>
      listUpTo(`/v1/reseller_stores/${storeId}/divergences`, DIVERGENCES_PER_STORE).then(
        ({ items, more }) => ({ storeId, more, items: items.map((item) => ({ ...item, resellerStoreId: item.resellerStoreId ?? storeId })) }),
        (failure) => {
          if (failure instanceof ApiError && failure.status === 404) return { storeId, more: false, items: [] };
          throw failure;
        },
      ),
    ),
  );
  const items = lists
    .flatMap((list) => list.items)
    .filter((item) => !item.dismissedAt && !item.resolvedAt)
    .sort((a, b) => Date.parse(b.since) - Date.parse(a.since));
  return { items, more: lists.filter((list) => list.more).map((list) => list.storeId) };
}

// ---------------------------------------------------------------------------------------------
// Filter forms of the lists whose filters are the URL's (jobs, audit log) and the bulk retry

/**
 * A form's values as edited, `values` (the URL's) to start with and again whenever those change
 * (back, a link): the draft and a setter that merges a change into it.
 */
export function useDraft(values) {
  const [draft, setDraft] = useState(values);
  const key = JSON.stringify(values);
  // In the render's own task (see SearchBox): an edit made right after Back is not lost to a late reset.
  useLayoutEffect(() => setDraft(values), [key]);
  return [draft, useCallback((change) => setDraft((before) => ({ ...before, ...change })), [])];
}

/** A list's filter form: its fields, then "Apply filters", which calls `onApply` (it navigates). */
export function FilterForm({ label, onApply, children }) {
  const submit = (event) => {
    event.preventDefault();
    onApply();
  };
  return html`
    <form class="filters" onSubmit=${submit} aria-label=${label}>
      ${children}
      <button type="submit" class="secondary">Apply filters</button>
    </form>`;
}

/** Stores the console lists: past them, the store choices say that more exist. */
export const LISTED_STORES = 500;
/** Suppliers the console lists per store: past them, the supplier choices say that more exist. */
export const LISTED_SUPPLIERS_PER_STORE = 500;

/** The last, unselectable option of a store choice cut at LISTED_STORES. */
export function StoresCutOption() {
  return html`<option value="" disabled>First ${number.format(LISTED_STORES)} stores shown; more exist</option>`;
}

/** A choice of the user's reseller stores, "All stores" first (value ''). */
export function StoreSelect({ id, dir, value, onChange }) {
  return html`<div class="inline-field"><label for=${id}>Store</label><select id=${id} value=${value} onChange=${(e) => onChange(e.currentTarget.value)}>
      <option value="">All stores</option>
      ${(dir.stores ?? []).map((s) => html`<option value=${s.id}>${s.name}</option>`)}
      ${dir.storesCut && html`<${StoresCutOption} />`}
    </select></div>`;
}

/**
 * A choice of suppliers, "All suppliers" first (value ''); each named with its store unless
 * `oneStore`. A store (`storeId`, or any when '') with more suppliers than listed is said last.
 */
export function SupplierSelect({ id, dir, suppliers, storeId, oneStore, value, onChange }) {
  const cut = dir.suppliersCut(storeId);
  const first = `First ${number.format(LISTED_SUPPLIERS_PER_STORE)} suppliers`;
  return html`<div class="inline-field"><label for=${id}>Supplier</label><select id=${id} value=${value} onChange=${(e) => onChange(e.currentTarget.value)}>
      <option value="">All suppliers</option>
      ${suppliers.map((s) => html`<option value=${s.id}>${s.name}${oneStore ? '' : ` (${dir.storeName(s.resellerStoreId)})`}</option>`)}
      ${cut.map((cutStore) => html`<option value="" disabled>${first}${oneStore ? '' : ` of ${dir.storeName(cutStore)}`} shown; more exist</option>`)}
    </select></div>`;
}
