import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { principalOf } from '../auth/principal.ts';
import { withRequestId } from '../http/request-id.ts';
import { presentDetail } from '../sync-jobs/present.ts';
import type { SyncJobService } from '../sync-jobs/service.ts';
import type { CancellationService } from './service.ts';

export function cancellationRoutes(cancellations: CancellationService, jobs: SyncJobService) {
  const s = initServer();
  return s.router(contract.cancellations, {
    retry: async ({ params, req }) => {
      const principal = principalOf(req);
      const job = (await cancellations.retry(principal, params.id, params.cancellation_id)) ?? presentDetail(await jobs.get(principal, params.id));
      return { status: 200, body: withRequestId(req, job) };
    },
  });
}
