import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { principalOf } from '../auth/principal.ts';
import { listBody } from '../http/list.ts';
import { withRequestId } from '../http/request-id.ts';
import { presentDivergence } from './present.ts';
import type { DivergenceService } from './service.ts';

export function divergenceRoutes(divergences: DivergenceService) {
  const s = initServer();
  return s.router(contract.divergences, {
    list: async ({ params, query, req }) => ({
      status: 200,
      body: listBody(req, await divergences.list(principalOf(req), params.id, query), presentDivergence),
    }),
    dismiss: async ({ params, req }) => ({
      status: 200,
      body: withRequestId(req, presentDivergence(await divergences.dismiss(principalOf(req), params.id, params.divergence_id))),
    }),
    check: async ({ params, req }) => ({
      status: 202,
      body: withRequestId(req, { divergenceCheckId: await divergences.requestPass(principalOf(req), params.id) }),
    }),
  });
}
