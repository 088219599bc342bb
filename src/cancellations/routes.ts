import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { principalOf } from '../auth/principal.ts';
import { withRequestId } from '../http/request-id.ts';
import type { CancellationService } from './service.ts';

export function cancellationRoutes(cancellations: CancellationService) {
  const s = initServer();
  return s.router(contract.cancellations, {
    retry: async ({ params, req }) => {
      const job = await cancellations.retry(principalOf(req), params.id, params.cancellation_id);
      return { status: 200, body: withRequestId(req, job) };
    },
  });
}
