import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { withRequestId } from '../http/request-id.ts';
import { settledWithin } from '../shared/time.ts';

const CHECK_TIMEOUT_MS = 2_000;

async function check(probe: () => Promise<unknown>): Promise<'ok' | 'failing'> {
  return (await settledWithin(probe, CHECK_TIMEOUT_MS)) ? 'ok' : 'failing';
}

/** What readiness checks: each dependency's ping (src/db, src/queue), handed in by the composition root. */
export interface ReadinessProbes {
  database: () => Promise<unknown>;
  queue: () => Promise<unknown>;
}

export function healthRoutes(probes: ReadinessProbes) {
  const s = initServer();
  return s.router(contract.health, {
    live: async ({ req }) => ({ status: 200, body: withRequestId(req, { status: 'ok' as const }) }),
    ready: async ({ req }) => {
      const checks = {
        database: await check(probes.database),
        queue: await check(probes.queue),
      };
      const ready = Object.values(checks).every((state) => state === 'ok');
      return ready
        ? { status: 200, body: withRequestId(req, { status: 'ok' as const, checks }) }
        : { status: 503, body: withRequestId(req, { status: 'unavailable' as const, checks }) };
    },
  });
}
