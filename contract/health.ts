import { z } from 'zod';
import { auth, c, requestErrors } from './common.ts';

const Health = z.object({
  status: z.enum(['ok', 'unavailable']),
  checks: z.record(z.enum(['ok', 'failing'])).optional(),
  request_id: z.string(),
});

export const healthContract = c.router(
  {
    live: {
      method: 'GET',
      path: '/healthz',
      responses: { 200: Health },
      summary: 'Liveness',
      description: 'The process is up.',
    },
    ready: {
      method: 'GET',
      path: '/readyz',
      responses: { 200: Health, 503: Health },
      summary: 'Readiness',
      description: 'The database (and the queue, where this process runs workers) is reachable.',
    },
  },
  { commonResponses: requestErrors, metadata: auth('none') },
);
