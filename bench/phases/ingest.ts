/**
 * Ingest: signed orders/create webhooks from 32 connections against one API process, compared with
 * a bare baseline (bench/baseline-ingest.ts: the same verification and inserts with no framework).
 */
import path from 'node:path';
import { freePort } from '../../src/db/embedded.ts';
import { SHOP, round, spawnTs, waitForLog } from '../common.ts';
import { migrateDatabase, setupTenant, withClient, type Bench } from '../harness.ts';
import { PLAN, type Results } from '../settings.ts';

export async function ingestPhase(bench: Bench): Promise<Results> {
  bench.log('ingest: signed orders/create webhooks, 2 suppliers each, 32 connections');
  const serviceDb = await bench.createDatabase('bench_ingest');
  const baselineDb = await bench.createDatabase('bench_ingest_baseline');
  await migrateDatabase(baselineDb);
  const { connections, seconds, warmupSeconds } = PLAN.ingest;
  // The baseline needs only the ids of a reseller's stores; the service creates them through its API.
  const tenant = { ownerId: 'usr_bench', resellerStoreId: 'rst_bench', sourceStoreIds: ['sst_bench_1', 'sst_bench_2'] };

  const baselinePort = await freePort();
  const baseline = bench.track(spawnTs('bench/baseline-ingest.ts', {
    env: {
      DATABASE_URL: baselineDb,
      PORT: String(baselinePort),
      WEBHOOK_SECRET: SHOP.reseller.secret,
      OWNER_ID: tenant.ownerId,
      RESELLER_STORE_ID: tenant.resellerStoreId,
      SOURCE_STORE_IDS: tenant.sourceStoreIds.join(','),
    },
    logFile: path.join(bench.workspace.logs, 'baseline-ingest.log'),
  }));
  await waitForLog(baseline, 'baseline listening');
  const baselineUrl = `http://127.0.0.1:${baselinePort}`;
  const warmBaseline = await bench.load('ingest-baseline-warmup', { url: baselineUrl, mode: 'orders', path: '/v1/orders/webhook', connections, durationSeconds: warmupSeconds, startId: 1_000_000_000 });
  const baselineCpu = bench.cpuWindow(baseline.process.pid!);
  const base = await bench.load('ingest-baseline', { url: baselineUrl, mode: 'orders', path: '/v1/orders/webhook', connections, durationSeconds: seconds, startId: warmBaseline.nextId });
  const baseCpu = baselineCpu();
  await baseline.stop();
  bench.reportLoad('baseline', base);
  bench.reportCpu('baseline', baseCpu, base.ok);

  const service = await bench.startServiceProcess('ingest', serviceDb, { ROLE: 'api' });
  await setupTenant(service.url!);
  const warmService = await bench.load('ingest-service-warmup', { url: service.url!, mode: 'orders', path: '/v1/orders/webhook', connections, durationSeconds: warmupSeconds, startId: 2_000_000_000 });
  const stopSampling = bench.sampleActivity('the service run');
  const serviceCpu = bench.cpuWindow(service.child.process.pid!);
  const svc = await bench.load('ingest-service', { url: service.url!, mode: 'orders', path: '/v1/orders/webhook', connections, durationSeconds: seconds, startId: warmService.nextId });
  const svcCpu = serviceCpu();
  await stopSampling();
  bench.reportLoad('service ', svc);
  bench.reportCpu('service ', svcCpu, svc.ok);
  await service.stop();

  const rows = await withClient(serviceDb, async (c) => Number((await c.query('select count(*) from sync_jobs')).rows[0].count));
  const baselineRows = await withClient(baselineDb, async (c) => Number((await c.query('select count(*) from sync_jobs')).rows[0].count));
  bench.log(`  sync jobs written: service ${rows}, baseline ${baselineRows}`);
  if (rows < svc.ok * 2) bench.notes.push(`ingest: the service answered ${svc.ok} orders but wrote only ${rows} jobs`);

  return {
    'ingest.service_rps': round(svc.rps),
    'ingest.baseline_rps': round(base.rps),
    'ingest.ratio': round(svc.rps / base.rps, 3),
    'ingest.p50_ms': svc.p50,
    'ingest.p99_ms': svc.p99,
    'ingest.baseline_p50_ms': base.p50,
    'ingest.baseline_p99_ms': base.p99,
    'ingest.service_cpu_ms_per_req': round((svcCpu.process * 1000) / svc.ok, 2),
    'ingest.service_db_cpu_ms_per_req': round((svcCpu.database * 1000) / svc.ok, 2),
    'ingest.baseline_cpu_ms_per_req': round((baseCpu.process * 1000) / base.ok, 2),
    'ingest.baseline_db_cpu_ms_per_req': round((baseCpu.database * 1000) / base.ok, 2),
  };
}
