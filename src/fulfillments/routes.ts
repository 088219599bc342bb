import { initServer } from '@ts-rest/express';
import { contract } from '../../contract/index.ts';
import { principalOf, type Principal } from '../auth/principal.ts';
import { withRequestId } from '../http/request-id.ts';
import type { JobDetail } from '../sync-jobs/present.ts';
import type { FulfillmentService } from './service.ts';

/** `jobView`: the sync job as its GET answers it (the sync jobs feature's, handed in by src/app.ts). */
export function fulfillmentRoutes(fulfillments: FulfillmentService, jobView: (principal: Principal, syncJobId: string) => Promise<JobDetail>) {
  const s = initServer();
  return s.router(contract.fulfillments, {
    retry: async ({ params, req }) => {
      await fulfillments.retry(principalOf(req), params.id, params.fulfillment_id);
      return { status: 200, body: withRequestId(req, await jobView(principalOf(req), params.id)) };
    },
  });
}
