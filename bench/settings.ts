/** What a benchmark run does, read once from its environment (see the top of bench/run.ts). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './common.ts';

export const QUICK = process.env.BENCH_QUICK === '1';
export const PHASES = new Set((process.env.BENCH_PHASES ?? 'ingest,e2e,processing,scale,flow,fairness,capacity,cancellation,watch').split(',').map((p) => p.trim()));
export const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
export const KEEP = process.env.BENCH_KEEP === '1' || CPU_PROF || process.env.BENCH_EXPLAIN_MS !== undefined;
export const PGSTAT = process.env.BENCH_PGSTAT === '1' || process.env.BENCH_EXPLAIN_MS !== undefined;
/** BENCH_EXPLAIN_MS=20: auto_explain logs the plans of statements slower than 20 ms (implies BENCH_PGSTAT, kept with BENCH_KEEP). */
export const EXPLAIN_MS = process.env.BENCH_EXPLAIN_MS === undefined ? null : Number(process.env.BENCH_EXPLAIN_MS);
/** The service runs with the node flags `npm start` gives it (package.json), then any from BENCH_SERVICE_NODE_ARGS. */
export const SERVICE_NODE_ARGS = [
  ...(JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts.start as string).split(' ').filter((arg) => /^--(?!import)/.test(arg)),
  ...(process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean),
];

export const PLAN = {
  /** The figures of e2e, processing, cancellation and each capacity step are the median of this many measured runs (BENCH_RUNS). */
  runs: Number(process.env.BENCH_RUNS ?? (QUICK ? 1 : 3)),
  ingest: { connections: 32, seconds: QUICK ? 5 : 15, warmupSeconds: QUICK ? 1 : 3 },
  e2e: { rate: 200, seconds: QUICK ? 5 : 20, warmupSeconds: QUICK ? 1 : 3, latencyMs: 20 },
  processing: { jobs: QUICK ? 1_000 : 10_000 },
  scale: { small: 10_000, large: QUICK ? 100_000 : 1_000_000, connections: 4, seconds: QUICK ? 3 : 8, warmupSeconds: QUICK ? 1 : 2 },
  /** Raised per-store pacing for runs against the sandbox, which has no rate limit. */
  pacing: '*=2000:2000',
  /** A platform_a supplier enforcing 5 requests/s, bursts of 10 (429 Retry-After: 1), the service paced the same. */
  limit: { perSecond: 5, burst: 10 },
  flow: { workers: 2, orders: QUICK ? 60 : 200 },
  fairness: { backlog: QUICK ? 1_000 : 5_000, quietRate: 4, seconds: QUICK ? 8 : 25 },
  /** Orders routed then cancelled per run: `rate` orders/cancelled webhooks a second for `seconds`. */
  cancellation: { rate: 100, seconds: QUICK ? 4 : 10, raceSeconds: QUICK ? 2 : 5, latencyMs: 20 },
  capacity: { rates: QUICK ? [100, 200] : [100, 150, 200, 250, 300, 350, 400, 450, 500, 550, 600, 650, 700], seconds: QUICK ? 4 : 10, p99Ms: 1_000, latencyMs: 20 },
};

export const TARGETS: Record<string, { op: '>=' | '<='; value: number }> = {
  'ingest.ratio': { op: '>=', value: 0.9 },
  'ingest.p99_ms': { op: '<=', value: 50 },
  'e2e.p99_ms': { op: '<=', value: 500 },
  'capacity.orders_per_s': { op: '>=', value: 400 },
  'processing.ratio': { op: '>=', value: 0.5 },
  'scale.list_p99_growth': { op: '<=', value: 1.5 },
  'scale.stats_p99_ms': { op: '<=', value: 50 },
  'flow.ratio': { op: '>=', value: 0.9 },
  'flow.rate_limited': { op: '<=', value: 5 },
  'fairness.p99_ms': { op: '<=', value: 2000 },
  'cancellation.left_open': { op: '<=', value: 0 },
  'cancellation.race_left_open': { op: '<=', value: 0 },
  'watch.pass_s': { op: '<=', value: 10 },
  'watch.platform_reads': { op: '<=', value: 50 },
  rss_mb: { op: '<=', value: 256 },
};

/** One phase's figures, by results.json key. */
export type Results = Record<string, number | string | null>;
