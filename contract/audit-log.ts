import { z } from 'zod';
import { auth, authErrors, c, errorResponse, listOf, openApi, pageQuery, Timestamp } from './common.ts';

const AuditEntry = openApi(z.object({
  id: z.string(),
  resellerStoreId: z.string(),
  action: z
    .string()
    .describe(
      'What happened, e.g. `sync_job.created`, `sync_job.retried`, `sync_job.dead`, `sync_job.completed`, `reseller_store.created`, `source_store.deleted`, `order.lines_unmatched`, `order.refused` (an order webhook refused as invalid, with the reason), `source_store.vendor_tag_shared` (written once, on upgrade, on each active supplier whose vendor tag matches the same lines as another active one\'s of its reseller store; `metadata.sharedWith` names the others).',
    ),
  resourceType: z.string(),
  resourceId: z.string(),
  metadata: z.record(z.unknown()),
  actorId: z.string().describe('The user, API key or `system` that caused the action.'),
  createdAt: Timestamp,
}), { title: 'AuditEntry' });

export const auditLogContract = c.router(
  {
    list: {
      method: 'GET',
      path: '/v1/audit_log',
      query: pageQuery('auditEntry').extend({
        reseller_store_id: z.string().max(64).optional(),
        action: z.string().max(64).optional(),
        resource_id: z.string().max(64).optional(),
      }),
      responses: { 200: listOf(AuditEntry, 'AuditEntryList'), 400: errorResponse(400) },
      summary: 'Read the audit log',
      description: 'Entries of the current user\'s reseller stores, newest first. Written only by the system.',
    },
  },
  { commonResponses: authErrors, metadata: auth('bearer') },
);
