// The operator console (GET /console): plain ES modules, no build step. It talks only to the
// public API, as any client would. This module is the shell: signing in, the stores the views
// share (with their counts), the navigation, the search box and the router.
import { html, render, useCallback, useEffect, useLayoutEffect, useMemo, useState } from '/console/assets/preact-htm.js';
import { api, href, LISTED_STORES, StoresCutOption, LISTED_SUPPLIERS_PER_STORE, listUpTo, navigate, number, plainWords, POLL_MS, refreshSession, send, session, useLatest, useRoute } from './lib.js';
import { AttentionView } from './attention.js';
import { JobsView, SearchView, StoreView } from './jobs.js';
import { JobView } from './job.js';
import { EndpointView, WebhooksView } from './webhooks.js';
import { AuditView } from './audit.js';

// ---------------------------------------------------------------------------------------------
// Sign in

function SignIn({ notice, onSignedIn }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);

  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const started = await send('POST', '/v1/auth/login', { email, password });
      session.token = started.accessToken;
      onSignedIn();
    } catch (failure) {
      setError(plainWords(failure, 'sign in'));
      setBusy(false);
    }
  };

  return html`
    <main class="container narrow" id="main">
      <h1>Operator console</h1>
      <p>Sign in with the email and password of the account that owns the stores.</p>
      ${notice && html`<p class="notice" role="status">${notice}</p>`}
      <form onSubmit=${submit} aria-describedby=${error ? 'sign-in-error' : undefined}>
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="username" required autofocus
          value=${email} onInput=${(e) => setEmail(e.currentTarget.value)} aria-invalid=${error ? 'true' : undefined} />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required
          value=${password} onInput=${(e) => setPassword(e.currentTarget.value)} aria-invalid=${error ? 'true' : undefined} />
        ${error && html`<p id="sign-in-error" class="error" role="alert">${error}</p>`}
        <button type="submit" aria-busy=${busy ? 'true' : 'false'} disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </main>`;
}

// ---------------------------------------------------------------------------------------------
// The directory: the user's stores, their counts and their suppliers, shared by every view.

function useDirectory(reloads) {
  const [stores, setStores] = useState(null);
  const [stats, setStats] = useState({});
  const [suppliers, setSuppliers] = useState({});
  // Lists cut at their cap, said where they are shown: more stores exist, and the stores with more suppliers.
  const [cut, setCut] = useState({ stores: false, suppliersOf: [] });
  const [error, setError] = useState(null);

  useEffect(() => {
    let current = true;
    (async () => {
      try {
        const found = await listUpTo('/v1/reseller_stores', LISTED_STORES);
        const lists = await Promise.all(
          found.items.map((store) =>
            listUpTo(`/v1/reseller_stores/${store.id}/source_stores`, LISTED_SUPPLIERS_PER_STORE).then(
              ({ items, more }) => ({ storeId: store.id, items, more }),
              () => ({ storeId: store.id, items: [], more: false }),
            ),
          ),
        );
        if (!current) return;
        setStores(found.items);
        setSuppliers(Object.fromEntries(lists.flatMap((list) => list.items).map((supplier) => [supplier.id, supplier])));
        setCut({ stores: found.more, suppliersOf: lists.filter((list) => list.more).map((list) => list.storeId) });
        setError(null);
      } catch (failure) {
        if (current) setError(plainWords(failure, 'load your stores'));
      }
    })();
    return () => {
      current = false;
    };
  }, [reloads]);

  // The counts in the order they were asked: an earlier poll answering after a later one, or after
  // an action, would show counts older than those shown (a retried job dead again).
  const latestStats = useLatest();
  const loadStats = useCallback(async () => {
    if (!stores?.length) return;
    const current = latestStats();
    const entries = await Promise.all(
      stores.map((store) => api('GET', `/v1/reseller_stores/${store.id}/stats`).then((found) => [store.id, found], () => null)),
    );
    if (!current()) return;
    setStats((before) => ({ ...before, ...Object.fromEntries(entries.filter(Boolean)) }));
  }, [stores, reloads]);

  useEffect(() => {
    loadStats();
    const timer = setInterval(() => document.visibilityState === 'visible' && loadStats(), POLL_MS);
    return () => clearInterval(timer);
  }, [loadStats]);

  // What the views call after an action: the counts asked before it are dropped, and asked again at once.
  const statsAfterAction = useCallback(() => {
    latestStats.invalidate();
    loadStats();
  }, [loadStats]);

  return useMemo(() => {
    const storeById = Object.fromEntries((stores ?? []).map((store) => [store.id, store]));
    return {
      stores,
      stats,
      suppliers,
      error,
      loadStats: statsAfterAction,
      store: (id) => storeById[id] ?? null,
      // While the stores load, a name is an ellipsis; a deleted one (not listed) is its id.
      storeName: (id) => (stores === null ? '…' : storeById[id]?.name ?? id),
      supplierName: (id) => (stores === null ? '…' : suppliers[id]?.name ?? id),
      suppliersOf: (storeId) => Object.values(suppliers).filter((supplier) => !storeId || supplier.resellerStoreId === storeId),
      /** True when more stores exist than the LISTED_STORES listed. */
      storesCut: cut.stores,
      /** The stores (of `storeId`, or all) with more suppliers than the LISTED_SUPPLIERS_PER_STORE listed. */
      suppliersCut: (storeId) => cut.suppliersOf.filter((id) => !storeId || id === storeId),
    };
  }, [stores, stats, suppliers, cut, error, statsAfterAction]);
}

/** `3 dead, 1 failed` or `all clear`, for the store picker. */
function countsLabel(stats) {
  if (!stats) return '';
  const parts = [];
  if (stats.syncJobs.dead) parts.push(`${number.format(stats.syncJobs.dead)} dead`);
  if (stats.syncJobs.failed) parts.push(`${number.format(stats.syncJobs.failed)} failed`);
  // Dead jobs are counted above already: their to-do entries (job_dead) are not counted twice.
  const divergences = stats.attention ? Object.entries(stats.attention).reduce((sum, [type, count]) => sum + (type === 'job_dead' ? 0 : Number(count) || 0), 0) : 0;
  if (divergences) parts.push(`${number.format(divergences)} to check`);
  if (stats.syncJobs.pending) parts.push(`${number.format(stats.syncJobs.pending)} pending`);
  return parts.length ? parts.join(', ') : 'all clear';
}

// ---------------------------------------------------------------------------------------------
// Signed in

const SECTIONS = [
  { path: '/', label: 'Attention', matches: (parts) => parts.length === 0 },
  { path: '/jobs', label: 'Jobs', matches: (parts) => parts[0] === 'jobs' || parts[0] === 'stores' || parts[0] === 'search' },
  { path: '/webhooks', label: 'Webhooks', matches: (parts) => parts[0] === 'webhooks' },
  { path: '/audit', label: 'Audit log', matches: (parts) => parts[0] === 'audit' },
];

function Console({ user, onSignOut }) {
  const route = useRoute();
  const [reloads, setReloads] = useState(0);
  const [notice, setNotice] = useState('');
  const dir = useDirectory(reloads);
  // The store a view is about when its URL does not say (a job's page learns it from the job).
  const [viewStore, setViewStore] = useState('');
  const refresh = useCallback(() => setReloads((count) => count + 1), []);
  // The live region says each result once; a new view starts without the last one's message.
  useEffect(() => {
    setNotice('');
    setViewStore('');
  }, [route.path]);

  const [view, routeStore] = chooseView(route, { dir, announce: setNotice, reloads, refresh, setViewStore });
  const storeInView = routeStore || viewStore;
  return html`
    <a class="skip-link" href="#main" onClick=${(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>Skip to content</a>
    <header class="container topbar">
      <nav aria-label="Main">
        <ul><li><strong>Order routing</strong></li></ul>
        <ul class="sections">
          ${SECTIONS.map(
            (section) => html`<li><a href=${href(section.path)} aria-current=${section.matches(route.parts) ? 'page' : undefined}>${section.label}</a></li>`,
          )}
        </ul>
        <ul>
          <li class="account-email"><span class="muted">${user.email}</span></li>
          <li><button type="button" class="secondary outline" onClick=${onSignOut}>Sign out</button></li>
        </ul>
      </nav>
      <div class="toolbar">
        <${StorePicker} dir=${dir} current=${storeInView} />
        <${SearchBox} route=${route} />
        <button type="button" class="secondary outline" onClick=${refresh}>Refresh</button>
      </div>
    </header>
    <main class="container" id="main" tabindex="-1">
      <p class="live" role="status" aria-live="polite">${notice}</p>
      ${dir.error && html`<p class="error" role="alert">${dir.error}</p>`}
      ${view}
    </main>`;
}

/** The view for the URL, and the store it is about (the picker shows it). */
function chooseView(route, shared) {
  const [section, id] = route.parts;
  const key = `${route.path}?${route.params}`;
  switch (section) {
    case undefined:
      return [html`<${AttentionView} key="attention" ...${shared} />`, ''];
    case 'stores':
      return [html`<${StoreView} key=${`store-${id}`} storeId=${id} route=${route} ...${shared} />`, id];
    case 'jobs':
      if (id) return [html`<${JobView} key=${`job-${id}`} jobId=${id} ...${shared} />`, ''];
      return [html`<${JobsView} key="jobs" route=${route} ...${shared} />`, route.params.get('store') ?? ''];
    case 'search':
      return [html`<${SearchView} key=${key} route=${route} ...${shared} />`, ''];
    case 'webhooks':
      if (id) return [html`<${EndpointView} key=${`endpoint-${id}`} endpointId=${id} route=${route} ...${shared} />`, ''];
      return [html`<${WebhooksView} key="webhooks" ...${shared} />`, ''];
    case 'audit':
      return [html`<${AuditView} key="audit" route=${route} ...${shared} />`, route.params.get('store') ?? ''];
    default:
      return [html`<section><h1 tabindex="-1">Not found</h1><p>There is no such page in the console. <a href="#/">Go to what needs attention</a>.</p></section>`, ''];
  }
}

function StorePicker({ dir, current }) {
  if (!dir.stores?.length) return null;
  const pick = (event) => navigate(event.currentTarget.value ? href(`/stores/${event.currentTarget.value}`) : href('/'));
  return html`
    <div class="inline-field"><label for="store-picker">Store</label><select id="store-picker" value=${current ?? ''} onChange=${pick}>
        <option value="">All stores</option>
        ${dir.stores.map((store) => {
          const counts = countsLabel(dir.stats[store.id]);
          return html`<option value=${store.id}>${store.name}${counts ? ` · ${counts}` : ''}</option>`;
        })}
        ${dir.storesCut && html`<${StoresCutOption} />`}
      </select>
    </div>`;
}

function SearchBox({ route }) {
  const asked = route.parts[0] === 'search' ? route.params.get('q') ?? '' : '';
  const [text, setText] = useState(asked);
  // A layout effect runs with the render that changed the URL, so what the operator types right
  // after a navigation (Back, a link) is not overwritten by a reset that a passive effect runs later.
  useLayoutEffect(() => setText(asked), [asked]);
  const submit = (event) => {
    event.preventDefault();
    const q = text.trim();
    if (q) navigate(href('/search', { q }));
  };
  return html`
    <form role="search" class="search" onSubmit=${submit}>
      <label for="search" class="visually-hidden">Search by order number, job id or supplier</label>
      <input id="search" type="search" placeholder="Order, job id or supplier" value=${text}
        onInput=${(e) => setText(e.currentTarget.value)} />
      <button type="submit">Search</button>
    </form>`;
}

// ---------------------------------------------------------------------------------------------
// The app: starting (is there a session to resume?), signed out, signed in

function App() {
  const [state, setState] = useState({ phase: 'starting', user: null, notice: null });

  const enter = useCallback(async () => {
    try {
      const user = await api('GET', '/v1/auth/me');
      setState({ phase: 'signedIn', user, notice: null });
    } catch (failure) {
      setState({ phase: 'signedOut', user: null, notice: plainWords(failure, 'open your session') });
    }
  }, []);

  useEffect(() => {
    session.onExpired = () => setState({ phase: 'signedOut', user: null, notice: 'Your session has ended. Sign in again.' });
    // A refresh cookie from an earlier visit resumes the session without a password.
    refreshSession().then(
      (resumed) => (resumed ? enter() : setState({ phase: 'signedOut', user: null, notice: null })),
      (failure) => setState({ phase: 'signedOut', user: null, notice: plainWords(failure, 'resume your session') }),
    );
  }, []);

  useEffect(() => {
    if (state.phase !== 'signedIn') document.title = 'Operator console: Reseller Order-Routing Service';
  }, [state.phase]);

  const signOut = async () => {
    try {
      await send('POST', '/v1/auth/logout');
    } catch {
      // Signed out here either way; the refresh token expires on its own.
    }
    session.token = null;
    setState({ phase: 'signedOut', user: null, notice: 'You are signed out.' });
  };

  if (state.phase === 'starting') return html`<main class="container" id="main"><h1>Operator console</h1><p aria-busy="true">Loading…</p></main>`;
  if (state.phase === 'signedOut') return html`<${SignIn} notice=${state.notice} onSignedIn=${enter} />`;
  return html`<${Console} user=${state.user} onSignOut=${signOut} />`;
}

const root = document.getElementById('console');
root.textContent = '';
render(html`<${App} />`, root);
