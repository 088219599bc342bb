import type { Pool, PoolClient } from 'pg';

/** How long a request may wait for a connection (a free pool slot or a new connection) before it is refused. */
export const CONNECT_TIMEOUT_MS = 3_000;

/**
 * Settings of the ORM's `pg` pool that keep a database outage from turning into hung requests:
 * waiting for a connection is bounded (a refused wait is an "unavailable" 503, see errors.ts), dead
 * peers are noticed by TCP keepalive, and a transaction left open by a vanished client cannot hold
 * locks for long.
 */
export const POOL_OPTIONS = {
  connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  keepAlive: true,
  keepAliveInitialDelayMillis: 10_000,
  idle_in_transaction_session_timeout: 60_000,
  // A connection's prepared statements keep the plans made when they were first prepared
  // (src/db/prepared.ts); replacing connections bounds how stale those plans can get while tables grow.
  maxLifetimeSeconds: 10,
  application_name: 'order-routing-orm',
} as const;

interface Tracked {
  checkedOut: boolean;
  forced: boolean;
  release: ((error?: Error | boolean) => void) | undefined;
}

/**
 * Returns to the pool (as broken) a checked-out connection whose socket closed, so the pool can
 * replace it.
 *
 * Why: Kysely's controlled transactions (which MikroORM's `transactional` uses) release their
 * connection only after a successful COMMIT or ROLLBACK. When the database goes away mid-transaction
 * both fail, the connection is never released, and the pool loses that slot for good. Measured: one
 * 4-second outage under load leaked half of a 10-connection pool; a few outages more and every
 * request would wait for a connection forever, and `orm.close()` (graceful shutdown) never returns.
 *
 * A connection that closed can do nothing useful any more, so releasing it with an error is always
 * right; the release function pg-pool hands out becomes a no-op for such a connection, because the
 * code holding it may still call it once its own error has unwound.
 */
export function releaseClosedConnections(pool: Pool): void {
  const tracked = new WeakMap<PoolClient, Tracked>();
  pool.on('connect', (client) => {
    const state: Tracked = { checkedOut: false, forced: false, release: undefined };
    tracked.set(client, state);
    // pg-pool assigns `client.release` at every checkout; keep its function behind an accessor.
    Object.defineProperty(client, 'release', {
      configurable: true,
      get: () => state.release,
      set: (release: (error?: Error | boolean) => void) => {
        state.forced = false;
        state.release = (error) => {
          if (state.forced) return;
          release(error);
        };
      },
    });
    client.on('end', () => {
      if (!state.checkedOut || !state.release) return;
      state.release(new Error('the database connection closed while in use'));
      state.forced = true;
    });
  });
  pool.on('acquire', (client) => {
    const state = tracked.get(client);
    if (state) state.checkedOut = true;
  });
  pool.on('release', (_error, client) => {
    const state = tracked.get(client);
    if (state) state.checkedOut = false;
  });
}
