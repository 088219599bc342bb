// The operator console (GET /console): a plain ES module, no build step. It talks only to the
// public API, as any client would: a JWT access token kept in memory, renewed through the
// refresh cookie (POST /v1/auth/refresh) when the API answers 401.
import { html, render, useCallback, useEffect, useRef, useState } from '/console/assets/preact-htm.js';

const POLL_MS = 5000;
const JOB_POLL_MS = 2000;
const LIST_LIMIT = 50;
const STATUSES = ['pending', 'processing', 'completed', 'failed', 'dead'];

// ---------------------------------------------------------------------------------------------
// API client

class ApiError extends Error {
  constructor(status, body, retryAfter) {
    super(body?.error?.message ?? (status === 0 ? 'network error' : `HTTP ${status}`));
    this.status = status;
    this.code = body?.error?.code ?? (status === 0 ? 'network' : 'unknown');
    this.requestId = body?.request_id ?? null;
    this.retryAfter = retryAfter;
  }
}

const session = {
  token: null,
  refreshing: null,
  /** Called when the session cannot be renewed; the app goes back to the sign-in form. */
  onExpired: () => {},
};

async function send(method, path, body, token) {
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

/** One refresh at a time, however many calls found the token expired together. */
function refreshSession() {
  session.refreshing ??= send('POST', '/v1/auth/refresh')
    .then(
      (renewed) => {
        session.token = renewed.accessToken;
        return true;
      },
      () => false,
    )
    .finally(() => {
      session.refreshing = null;
    });
  return session.refreshing;
}

/** An authenticated call; a 401 renews the access token once and tries again. */
async function api(method, path, body) {
  try {
    return await send(method, path, body, session.token);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 401) throw error;
    if (!(await refreshSession())) {
      session.token = null;
      session.onExpired();
      throw error;
    }
    return send(method, path, body, session.token);
  }
}

/** What went wrong, in plain words, for people rather than programs. */
function plainWords(error, doing) {
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
    case 'sync_job_not_retryable':
      return `${prefix}${error.message}`;
    default:
      return `${prefix}${error.message} (HTTP ${error.status}).`;
  }
}

// ---------------------------------------------------------------------------------------------
// Formatting

const number = new Intl.NumberFormat('en');

function duration(seconds) {
  if (seconds < 60) return `${Math.max(0, Math.round(seconds))} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} days`;
}

const since = (iso) => (Date.now() - Date.parse(iso)) / 1000;
const absolute = (iso) => new Date(iso).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'medium' });

function Ago({ at, never = 'never' }) {
  if (!at) return html`<span>${never}</span>`;
  return html`<time datetime=${at} title=${absolute(at)}>${duration(since(at))} ago</time>`;
}

function Status({ status }) {
  return html`<span class=${`badge badge-${status}`}>${status}</span>`;
}

const TRIGGERS = {
  initial: 'First attempt',
  automatic_retry: 'Automatic retry',
  manual_retry: 'Manual retry',
  recovered: 'Recovered after a lost worker',
};

// ---------------------------------------------------------------------------------------------
// Hooks

/** Runs `load` now, whenever `deps` change, and every `everyMs` while the page is visible. */
function usePolling(load, everyMs, deps) {
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
// Signed in

function Console({ user, onSignOut }) {
  const [stores, setStores] = useState(null);
  const [storeId, setStoreId] = useState(null);
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState('');
  const heading = useRef(null);

  useEffect(() => {
    heading.current?.focus();
    api('GET', '/v1/reseller_stores?limit=100').then(
      (page) => {
        setStores(page.data);
        setStoreId((current) => current ?? page.data[0]?.id ?? null);
      },
      (failure) => setError(plainWords(failure, 'load your stores')),
    );
  }, []);

  const store = stores?.find((candidate) => candidate.id === storeId) ?? null;
  return html`
    <header class="container topbar">
      <nav aria-label="Account">
        <ul><li><strong>Order routing</strong></li></ul>
        <ul>
          <li><span class="muted">Signed in as ${user.email}</span></li>
          <li><button type="button" class="secondary outline" onClick=${onSignOut}>Sign out</button></li>
        </ul>
      </nav>
    </header>
    <main class="container" id="main">
      <h1 tabindex="-1" ref=${heading}>Operator console</h1>
      <p class="live" role="status" aria-live="polite">${notice}</p>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${stores === null && !error && html`<p aria-busy="true">Loading your stores…</p>`}
      ${stores?.length === 0 && html`<p>You have no reseller stores yet. Connect one through the API (<a href="/docs">API reference</a>).</p>`}
      ${stores?.length > 0 &&
      html`
        <label for="store-picker">Reseller store</label>
        <select id="store-picker" value=${storeId} onChange=${(e) => setStoreId(e.currentTarget.value)}>
          ${stores.map((s) => html`<option value=${s.id}>${s.name} (${s.shopDomain})</option>`)}
        </select>`}
      ${store && html`<${StorePanel} key=${store.id} store=${store} announce=${setNotice} />`}
    </main>`;
}

function StorePanel({ store, announce }) {
  const [stats, setStats] = useState(null);
  const [jobs, setJobs] = useState(null);
  const [suppliers, setSuppliers] = useState({});
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(null);
  const [openJob, setOpenJob] = useState(null);
  const opener = useRef(null);

  const load = useCallback(async () => {
    try {
      const [nextStats, dead, failed] = await Promise.all([
        api('GET', `/v1/reseller_stores/${store.id}/stats`),
        api('GET', `/v1/sync_jobs?reseller_store_id=${store.id}&status=dead&limit=${LIST_LIMIT}`),
        api('GET', `/v1/sync_jobs?reseller_store_id=${store.id}&status=failed&limit=${LIST_LIMIT}`),
      ]);
      setStats(nextStats);
      const failedAt = (job) => job.deadAt ?? job.failedAt ?? job.updatedAt;
      setJobs([...dead.data, ...failed.data].sort((a, b) => Date.parse(failedAt(b)) - Date.parse(failedAt(a))));
      setError(null);
    } catch (failure) {
      setError(plainWords(failure, 'load the store'));
    }
  }, [store.id]);
  usePolling(load, POLL_MS, [load]);

  useEffect(() => {
    api('GET', `/v1/reseller_stores/${store.id}/source_stores?limit=100`).then(
      (page) => setSuppliers(Object.fromEntries(page.data.map((s) => [s.id, s.name]))),
      () => {},
    );
  }, [store.id]);

  const act = async (name, work) => {
    setBusy(name);
    setError(null);
    try {
      announce(await work());
    } catch (failure) {
      if (failure instanceof ApiError && failure.status === 401) return;
      setError(plainWords(failure, name));
    } finally {
      setBusy(null);
      load();
    }
  };

  const retryOne = (job) =>
    act('retry the job', async () => {
      await api('POST', `/v1/sync_jobs/${job.id}/retry`);
      return `Job for order ${job.externalOrderId} retried; it is pending again.`;
    });

  const retryAllDead = () =>
    act('retry the dead jobs', async () => {
      let retried = 0;
      // Each call retries up to 1,000; the retried ones are pending, so the next call gets the next ones.
      for (let calls = 0; calls < 50; calls++) {
        const result = await api('POST', '/v1/sync_jobs/bulk_retry', { status: 'dead', reseller_store_id: store.id });
        retried += result.retried;
        if (!result.has_more) break;
      }
      return retried === 0 ? 'There were no dead jobs to retry.' : `Retried ${number.format(retried)} dead ${retried === 1 ? 'job' : 'jobs'}; they are pending again.`;
    });

  const reconcile = () =>
    act('start a reconciliation', async () => {
      try {
        await api('POST', `/v1/reseller_stores/${store.id}/reconcile`, {});
        return 'Reconciliation started: orders whose webhooks were missed will be routed shortly.';
      } catch (failure) {
        // An older service behind this page, without reconciliation: the route itself is missing.
        if (failure instanceof ApiError && failure.status === 404 && /^No route/.test(failure.message)) {
          return 'Reconciliation is not available on this service.';
        }
        throw failure;
      }
    });

  const openTimeline = (job, button) => {
    opener.current = button;
    setOpenJob(job.id);
  };
  const closeTimeline = () => {
    setOpenJob(null);
    opener.current?.focus();
  };

  const dead = stats?.syncJobs.dead ?? 0;
  return html`
    <section aria-labelledby="store-heading">
      <h2 id="store-heading">${store.name}</h2>
      <p class="muted">${store.shopDomain} · ${store.platform}</p>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${stats === null && !error && html`<p aria-busy="true">Loading the store…</p>`}
      ${stats && html`<${StatsView} stats=${stats} />`}
      <div class="actions">
        <button type="button" onClick=${retryAllDead} disabled=${busy !== null || dead === 0} aria-busy=${busy === 'retry the dead jobs' ? 'true' : 'false'}>
          Retry all dead jobs${stats ? ` (${number.format(dead)})` : ''}
        </button>
        <button type="button" class="secondary" onClick=${reconcile} disabled=${busy !== null} aria-busy=${busy === 'start a reconciliation' ? 'true' : 'false'}>
          Run reconciliation
        </button>
        <button type="button" class="secondary outline" onClick=${load}>Refresh</button>
      </div>
      <${ProblemJobs} jobs=${jobs} stats=${stats} suppliers=${suppliers} busy=${busy} onRetry=${retryOne} onOpen=${openTimeline} />
      ${openJob && html`<${JobDialog} jobId=${openJob} suppliers=${suppliers} onClose=${closeTimeline} onRetry=${retryOne} />`}
    </section>`;
}

function StatsView({ stats }) {
  return html`
    <div class="grid stats">
      <table>
        <caption>Counts by status</caption>
        <thead><tr><th scope="col">Status</th><th scope="col">Sync jobs</th><th scope="col">Fulfillments</th></tr></thead>
        <tbody>
          ${[...STATUSES, 'skipped'].map(
            (status) => html`<tr>
              <th scope="row"><${Status} status=${status} /></th>
              <td>${status in stats.syncJobs ? number.format(stats.syncJobs[status]) : html`<span aria-label="not applicable">—</span>`}</td>
              <td>${number.format(stats.fulfillments[status])}</td>
            </tr>`,
          )}
        </tbody>
      </table>
      <dl>
        <dt>Oldest pending job</dt>
        <dd>${stats.oldestPendingSeconds === null ? 'none waiting' : `waiting ${duration(stats.oldestPendingSeconds)}`}</dd>
        <dt>Last order</dt>
        <dd><${Ago} at=${stats.lastOrderAt} never="no order yet" /></dd>
        <dt>Last reconciliation</dt>
        <dd><${Ago} at=${stats.lastReconciledAt} /></dd>
      </dl>
    </div>`;
}

function ProblemJobs({ jobs, stats, suppliers, busy, onRetry, onOpen }) {
  const total = stats ? stats.syncJobs.dead + stats.syncJobs.failed : null;
  return html`
    <section aria-labelledby="problems-heading">
      <h3 id="problems-heading">Dead and failed jobs</h3>
      ${jobs === null && html`<p aria-busy="true">Loading jobs…</p>`}
      ${jobs?.length === 0 && html`<p>No dead or failed jobs. Everything is moving.</p>`}
      ${jobs?.length > 0 &&
      html`
        ${total !== null && total > jobs.length && html`<p class="muted">Showing the ${jobs.length} most recent of ${number.format(total)}.</p>`}
        <table class="cards">
          <caption class="visually-hidden">Dead and failed sync jobs, most recent failure first</caption>
          <thead>
            <tr>
              <th scope="col">Order</th><th scope="col">Supplier</th><th scope="col">Status</th><th scope="col">Attempts</th>
              <th scope="col">Last error</th><th scope="col">Age</th><th scope="col"><span class="visually-hidden">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            ${jobs.map(
              (job) => html`<tr key=${job.id}>
                <td data-label="Order">#${job.externalOrderId}</td>
                <td data-label="Supplier">${suppliers[job.sourceStoreId] ?? job.sourceStoreId}</td>
                <td data-label="Status"><${Status} status=${job.status} /> <small class="since"><${Ago} at=${job.deadAt ?? job.failedAt ?? job.updatedAt} /></small></td>
                <td data-label="Attempts">${job.attempts}</td>
                <td data-label="Last error" class="error-text">${job.errorMessage ?? '—'}</td>
                <td data-label="Age"><time datetime=${job.createdAt} title=${absolute(job.createdAt)}>${duration(since(job.createdAt))}</time></td>
                <td class="row-actions">
                  <button type="button" class="outline" onClick=${(e) => onOpen(job, e.currentTarget)}
                    aria-label=${`Timeline of the job for order ${job.externalOrderId}`}>Timeline</button>
                  <button type="button" onClick=${() => onRetry(job)} disabled=${busy !== null}
                    aria-label=${`Retry the job for order ${job.externalOrderId}`}>Retry</button>
                </td>
              </tr>`,
            )}
          </tbody>
        </table>`}
    </section>`;
}

// ---------------------------------------------------------------------------------------------
// A job's timeline

function JobDialog({ jobId, suppliers, onClose, onRetry }) {
  const dialog = useRef(null);
  const heading = useRef(null);
  const [job, setJob] = useState(null);
  const [attempts, setAttempts] = useState(null);
  const [error, setError] = useState(null);

  useEffect(() => {
    dialog.current.showModal();
    heading.current?.focus();
  }, []);

  const load = useCallback(async () => {
    try {
      const [detail, timeline] = await Promise.all([api('GET', `/v1/sync_jobs/${jobId}`), api('GET', `/v1/sync_jobs/${jobId}/attempts`)]);
      setJob(detail);
      setAttempts(timeline.data);
      setError(null);
    } catch (failure) {
      setError(plainWords(failure, 'load the job'));
    }
  }, [jobId]);
  usePolling(load, JOB_POLL_MS, [load]);

  // Closing the native dialog (Escape does it too) fires its close event, which unmounts it: focus
  // can only go back to the page once the modal is closed.
  const close = () => dialog.current?.open && dialog.current.close();
  const retryable = job && (job.status === 'dead' || job.status === 'failed');
  return html`
    <dialog ref=${dialog} aria-labelledby="job-heading" onClose=${onClose}>
      <article>
        <header>
          <button type="button" class="close-button" aria-label="Close the timeline" onClick=${close}>×</button>
          <h2 id="job-heading" tabindex="-1" ref=${heading}>${job ? `Job for order #${job.externalOrderId}` : 'Job'}</h2>
        </header>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        ${!job && !error && html`<p aria-busy="true">Loading the job…</p>`}
        ${job &&
        html`
          <dl class="facts">
            <dt>Status</dt><dd><span aria-live="polite"><${Status} status=${job.status} /></span></dd>
            <dt>Supplier</dt><dd>${suppliers[job.sourceStoreId] ?? job.sourceStoreId}</dd>
            <dt>Attempts</dt><dd>${job.attempts}</dd>
            <dt>Supplier order</dt><dd>${job.sourceOrderId ?? '—'}</dd>
            <dt>Created</dt><dd><${Ago} at=${job.createdAt} /></dd>
            ${job.errorMessage && html`<dt>Last error</dt><dd class="error-text">${job.errorMessage}</dd>`}
            ${job.supplierCancelledAt &&
            html`<dt>Cancelled by the supplier</dt><dd class="error-text"><${Ago} at=${job.supplierCancelledAt} />${job.supplierCancelReason ? ` (${job.supplierCancelReason})` : ''}</dd>`}
          </dl>
          ${retryable && html`<button type="button" onClick=${() => onRetry(job)}>Retry this job</button>`}
          <h3>Attempts</h3>
          <${Timeline} attempts=${attempts} label="Attempts of the job, oldest first" />
          <h3>Fulfillments</h3>
          ${job.fulfillments.length === 0 && html`<p>No tracking received from the supplier yet.</p>`}
          ${job.fulfillments.map(
            (fulfillment) => html`
              <section class="fulfillment" aria-label=${`Fulfillment ${fulfillment.trackingNumbers.join(', ') || fulfillment.id}`}>
                <p>
                  <${Status} status=${fulfillment.status} /> Tracking ${fulfillment.trackingNumbers.join(', ') || 'without a number'}
                  ${fulfillment.trackingCompany ? ` (${fulfillment.trackingCompany})` : ''} · ${fulfillment.attempts} ${fulfillment.attempts === 1 ? 'attempt' : 'attempts'}
                </p>
                ${fulfillment.errorMessage && html`<p class="error-text">${fulfillment.errorMessage}</p>`}
                <${Timeline} attempts=${fulfillment.timeline ?? null} label="Attempts of the fulfillment, oldest first" />
              </section>`,
          )}
          ${(job.cancellations ?? []).length > 0 && html`<h3>Cancellations</h3>`}
          ${(job.cancellations ?? []).map(
            (cancellation) => html`
              <section class="cancellation" aria-label=${`Cancellation ${cancellation.id}`}>
                <p>
                  <${Status} status=${cancellation.status} /> ${CANCELLATION_OUTCOMES[cancellation.outcome] ?? 'No outcome yet'}
                  · ${cancellation.scope === 'order' ? 'whole order' : cancellation.lines.map((line) => `${line.sku} × ${line.quantity}`).join(', ')}
                  · ${cancellation.attempts} ${cancellation.attempts === 1 ? 'attempt' : 'attempts'}
                </p>
                ${cancellation.reason && html`<p>${cancellation.reason}</p>`}
                ${cancellation.errorMessage && html`<p class="error-text">${cancellation.errorMessage}</p>`}
              </section>`,
          )}`}
        <footer>
          <button type="button" class="secondary" onClick=${close}>Close</button>
        </footer>
      </article>
    </dialog>`;
}

/** A cancellation's outcome in plain words (order-changes.md). */
const CANCELLATION_OUTCOMES = {
  cancelled: 'Cancelled at the supplier',
  not_placed: 'Never placed at the supplier',
  too_late: 'Too late: the supplier already shipped',
  unsupported: 'Not supported by the supplier\'s platform: handle by hand',
};

function Timeline({ attempts, label }) {
  if (attempts === null) return html`<p aria-busy="true">Loading attempts…</p>`;
  if (attempts.length === 0) return html`<p>No attempt yet: the job is waiting for a worker.</p>`;
  return html`
    <table class="cards timeline">
      <caption class="visually-hidden">${label}</caption>
      <thead>
        <tr>
          <th scope="col">#</th><th scope="col">Trigger</th><th scope="col">Started</th><th scope="col">Duration</th>
          <th scope="col">Outcome</th><th scope="col">Platform status</th><th scope="col">Supplier order</th><th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
        ${attempts.map(
          (attempt) => html`<tr key=${attempt.attempt}>
            <td data-label="Attempt">${attempt.attempt}</td>
            <td data-label="Trigger">${TRIGGERS[attempt.trigger] ?? attempt.trigger}</td>
            <td data-label="Started"><time datetime=${attempt.startedAt} title=${absolute(attempt.startedAt)}>${absolute(attempt.startedAt)}</time></td>
            <td data-label="Duration">${attempt.durationMs === null ? '—' : `${number.format(attempt.durationMs)} ms`}</td>
            <td data-label="Outcome"><span class=${`outcome outcome-${attempt.outcome}`}>${attempt.outcome.replace('_', ' ')}</span></td>
            <td data-label="Platform status">${attempt.platformStatus ?? '—'}</td>
            <td data-label="Supplier order">${attempt.sourceOrderId ?? '—'}</td>
            <td data-label="Error" class="error-text">${attempt.errorMessage ?? '—'}</td>
          </tr>`,
        )}
      </tbody>
    </table>`;
}

// ---------------------------------------------------------------------------------------------
// The app: starting (is there a session to resume?), signed out, signed in

function App() {
  const [state, setState] = useState({ phase: 'starting', user: null, notice: null });

  const enter = useCallback(async () => {
    try {
      const user = await api('GET', '/v1/auth/me');
      document.title = 'Operator console: Reseller Order-Routing Service';
      setState({ phase: 'signedIn', user, notice: null });
    } catch (failure) {
      setState({ phase: 'signedOut', user: null, notice: plainWords(failure, 'open your session') });
    }
  }, []);

  useEffect(() => {
    session.onExpired = () => setState({ phase: 'signedOut', user: null, notice: 'Your session has ended. Sign in again.' });
    // A refresh cookie from an earlier visit resumes the session without a password.
    refreshSession().then((resumed) => (resumed ? enter() : setState({ phase: 'signedOut', user: null, notice: null })));
  }, []);

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
