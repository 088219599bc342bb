import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { principalOf } from '../auth/principal.ts';
import { listBody } from '../http/list.ts';
import { withRequestId } from '../http/request-id.ts';
import { iso, isoOrNull } from '../shared/time.ts';
import type { ReconciliationRun } from './entity.ts';
import type { ReconciliationService } from './service.ts';

export function presentReconciliation(run: ReconciliationRun) {
  return {
    id: run.id,
    resellerStoreId: run.resellerStoreId,
    trigger: run.trigger,
    status: run.status,
    since: isoOrNull(run.since),
    startedAt: iso(run.startedAt),
    finishedAt: isoOrNull(run.finishedAt),
    ordersSeen: run.ordersSeen,
    ordersRouted: run.ordersRouted,
    error: run.error ?? null,
  };
}

export function reconciliationRoutes(reconciliations: ReconciliationService) {
  const s = initServer();
  return s.router(contract.reconciliations, {
    start: async ({ params, body, req }) => ({
      status: 202,
      body: withRequestId(req, { reconciliationId: await reconciliations.request(principalOf(req), params.id, body?.since) }),
    }),
    list: async ({ params, query, req }) => ({
      status: 200,
      body: listBody(req, await reconciliations.list(principalOf(req), params.id, query), presentReconciliation),
    }),
  });
}
