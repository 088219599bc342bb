/**
 * Scale: list endpoints (sync jobs, audit log) at a small and a large number of rows, the large one
 * made of synthetic rows inserted straight into the database; p99 must not grow with the table.
 */
import { orderTemplate, round, webhookHeaders } from '../common.ts';
import { setupTenant, withClient, type Bench, type Tenant } from '../harness.ts';
import type { LoadResult } from '../load.ts';
import { PLAN, type Results } from '../settings.ts';

/** Sortable ids like the service's (prefix + UUIDv7 hex), for row `i` created at `baseMs + i`. */
const syntheticId = (prefix: string) =>
  `'${prefix}_' || lpad(to_hex($1::bigint + i), 12, '0') || '7' || lpad(to_hex(i % 4096), 3, '0') || '8' || substr(md5(i::text), 1, 15)`;

async function insertSyntheticJobs(url: string, tenant: Tenant, from: number, to: number, baseMs: number): Promise<void> {
  const chunks: [number, number][] = [];
  for (let start = from; start <= to; start += 100_000) chunks.push([start, Math.min(to, start + 99_999)]);
  const params = (start: number, end: number) => [baseMs, start, end, tenant.ownerId, tenant.resellerStoreId, tenant.sourceStoreIds[0], tenant.sourceStoreIds[1]];
  // Jobs and audit entries on two connections at once: the machine has two cores.
  await Promise.all([
    withClient(url, async (c) => {
      for (const [start, end] of chunks) {
        await c.query(
          `insert into sync_jobs (id, owner_id, reseller_store_id, source_store_id, external_order_id, origin, status, attempts, source_order_id,
             completed_at, dead_at, error_message, retries_left, "order", queue_message_id, version, created_at, updated_at)
           select ${syntheticId('job')}, $4, $5, case when i % 2 = 0 then $6 else $7 end, (5000000000 + i / 2)::text, 'webhook',
             case when i % 100 = 0 then 'dead' else 'completed' end, case when i % 100 = 0 then 4 else 1 end, (100000 + i)::text,
             case when i % 100 = 0 then null else ts end, case when i % 100 = 0 then ts else null end,
             case when i % 100 = 0 then 'platform_b bench-acme.example: POST /orders answered 500' else null end,
             case when i % 100 = 0 then 0 else 3 end, t."order", null, 3, ts, ts
           from generate_series($2::int, $3::int) as i
           cross join lateral (select to_timestamp(($1::bigint + i) / 1000.0) as ts) as x
           cross join (select "order" from sync_jobs order by id desc limit 1) as t`,
          params(start, end),
        );
      }
      await c.query('vacuum analyze sync_jobs');
    }),
    withClient(url, async (c) => {
      for (const [start, end] of chunks) {
        await c.query(
          `insert into audit_entries (id, owner_id, reseller_store_id, action, resource_type, resource_id, metadata, actor_id, created_at)
           select ${syntheticId('aud')}, $4, $5, 'sync_job.created', 'sync_job', ${syntheticId('job')},
             jsonb_build_object('externalOrderId', (5000000000 + i / 2)::text, 'sourceStoreId', case when i % 2 = 0 then $6 else $7 end, 'origin', 'webhook', 'webhookId', md5(i::text)),
             'system', to_timestamp(($1::bigint + i) / 1000.0)
           from generate_series($2::int, $3::int) as i`,
          params(start, end),
        );
      }
      await c.query('vacuum analyze audit_entries');
    }),
  ]);
}

export async function scalePhase(bench: Bench): Promise<Results> {
  const { small, large, connections, seconds, warmupSeconds } = PLAN.scale;
  bench.log(`scale: list p99 with ${small} and ${large} jobs (and as many audit entries), ${connections} connections`);
  const url = await bench.createDatabase('bench_scale');
  const service = await bench.startServiceProcess('scale', url, { ROLE: 'api' });
  const tenant = await setupTenant(service.url!);
  // One real job, whose snapshot and order documents the synthetic rows copy.
  const { body, signature } = orderTemplate().render(6_000_000_000);
  const first = await fetch(`${service.url}/v1/orders/webhook`, { method: 'POST', headers: webhookHeaders(signature, 'bench-scale-seed'), body });
  if (!first.ok) throw new Error(`seed webhook answered ${first.status}: ${await first.text()}`);
  const baseMs = Date.now() - large - 60_000;

  const measure = async (size: number) => {
    const out: Record<string, LoadResult> = {};
    const routes = [
      ['sync_jobs', '/v1/sync_jobs?limit=20'],
      ['audit_log', '/v1/audit_log'],
      // Not part of the growth figure: a filter on an action the log hardly has.
      ['audit_log_by_action', '/v1/audit_log?action=sync_job.retried'],
      // The operator's store overview: counted from store_status_counts, not from the jobs.
      ['stats', `/v1/reseller_stores/${tenant.resellerStoreId}/stats`],
    ] as const;
    for (const [key, route] of routes) {
      out[key] = await bench.load(`scale-${key}-${size}`, {
        url: service.url!, mode: 'get', path: route, connections, durationSeconds: seconds, warmupSeconds, headers: { authorization: `Bearer ${tenant.token}` },
      });
      bench.reportLoad(`${route} with ${size} jobs`, out[key]);
    }
    return out;
  };

  let t = Date.now();
  await insertSyntheticJobs(url, tenant, 1, small - 1, baseMs);
  bench.log(`  inserted ${small} jobs and audit entries in ${round((Date.now() - t) / 1000)} s`);
  const atSmall = await measure(small);
  t = Date.now();
  await insertSyntheticJobs(url, tenant, small, large - 1, baseMs);
  bench.log(`  inserted up to ${large} jobs and audit entries in ${round((Date.now() - t) / 1000)} s`);
  const atLarge = await measure(large);
  await service.stop();

  const growth = {
    sync_jobs: atLarge.sync_jobs!.p99 / atSmall.sync_jobs!.p99,
    audit_log: atLarge.audit_log!.p99 / atSmall.audit_log!.p99,
  };
  return {
    'scale.list_p99_growth': round(Math.max(growth.sync_jobs, growth.audit_log), 2),
    'scale.sync_jobs_p99_growth': round(growth.sync_jobs, 2),
    'scale.audit_log_p99_growth': round(growth.audit_log, 2),
    'scale.sync_jobs_p99_ms_small': atSmall.sync_jobs!.p99,
    'scale.sync_jobs_p99_ms_large': atLarge.sync_jobs!.p99,
    'scale.audit_log_p99_ms_small': atSmall.audit_log!.p99,
    'scale.audit_log_p99_ms_large': atLarge.audit_log!.p99,
    'scale.audit_log_by_action_p99_ms_small': atSmall.audit_log_by_action!.p99,
    'scale.audit_log_by_action_p99_ms_large': atLarge.audit_log_by_action!.p99,
    'scale.sync_jobs_rps_large': round(atLarge.sync_jobs!.rps),
    'scale.audit_log_rps_large': round(atLarge.audit_log!.rps),
    'scale.stats_p99_ms': atLarge.stats!.p99,
    'scale.jobs_large': large,
  };
}
