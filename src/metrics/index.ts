import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PlatformCallObservation } from '../platforms/http.ts';
import { settledWithin } from '../shared/time.ts';

/** How long a scrape waits for a figure read from the database (as /readyz waits for its checks). */
const DATABASE_READ_TIMEOUT_MS = 2_000;

/**
 * A figure read from the database at scrape time, or null when the read failed or took longer than
 * DATABASE_READ_TIMEOUT_MS (the database is away). Its gauge then leaves its series out of that
 * scrape (a labelled gauge) or reports NaN (unknown), rather than failing the whole scrape: the
 * process's own series (the 503s of the outage among them) are what an operator reads during it.
 */
async function readOrNull<T>(read: () => Promise<T>): Promise<T | null> {
  return (await settledWithin(read, DATABASE_READ_TIMEOUT_MS))?.value ?? null;
}

/**
 * The service's Prometheus metrics, on a registry of its own (several services can run in one
 * process in tests). Served at GET /metrics.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly attemptTransitions = new Counter({
    name: 'attempt_transitions_total',
    help: 'Lifecycle transitions committed of retried work, by kind (sync_job, fulfillment) and the status reached.',
    labelNames: ['kind', 'status'] as const,
    registers: [this.registry],
  });

  readonly sweepRescues = new Counter({
    name: 'attempt_sweep_rescues_total',
    help: 'Stranded work the sweep moved, by kind and action (requeued: its message was gone; lost: its attempt was lost and is retried; dead).',
    labelNames: ['kind', 'action'] as const,
    registers: [this.registry],
  });

  readonly attemptsPostponed = new Counter({
    name: 'attempts_postponed_total',
    help: 'Queue messages of retried work postponed to their store\'s next turn without spending an attempt, by kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly attemptsDeferred = new Counter({
    name: 'attempts_deferred_total',
    help: 'Queue messages of retried work beyond their store\'s booking horizon: postponed with an estimate of their turn (their place in the store\'s line), nothing booked, by kind. Also counted in attempts_postponed_total.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly attemptsLetGo = new Counter({
    name: 'attempts_let_go_total',
    help: 'Attempts still calling a slow platform when their batch was released (handed to a watchdog message), by kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly webhookSignatureChecks = new Counter({
    name: 'webhook_signature_checks_total',
    help: "HMACs computed to verify fulfillment webhooks against a shop domain's source store secrets (the cost a forged delivery imposes).",
    registers: [this.registry],
  });

  readonly webhookVerificationFailures = new Counter({
    name: 'webhook_verification_failures_total',
    help: 'Webhook deliveries refused with invalid_signature, by endpoint.',
    labelNames: ['endpoint'] as const,
    registers: [this.registry],
  });

  readonly platformCallDuration = new Histogram({
    name: 'platform_call_duration_seconds',
    help: 'Calls to storefront platforms by platform, method and outcome.',
    labelNames: ['platform', 'method', 'outcome'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly reconciliationRuns = new Counter({
    name: 'reconciliation_runs_total',
    help: 'Reconciliation runs finished in this process, by outcome (succeeded, failed).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly reconciliationOrdersRouted = new Counter({
    name: 'reconciliation_orders_routed_total',
    help: 'Orders routed by reconciliation in this process because their webhook had not routed them.',
    registers: [this.registry],
  });

  readonly watchPasses = new Counter({
    name: 'divergence_watch_passes_total',
    help: 'Divergence-watch passes finished in this process, by outcome (succeeded, failed).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly watchRepairs = new Counter({
    name: 'divergence_watch_repairs_total',
    help: 'What divergence-watch passes of this process found and acted on, by type (tracking, supplier_cancelled, storefront_cancelled, stale).',
    labelNames: ['type'] as const,
    registers: [this.registry],
  });

  readonly watchPauses = new Counter({
    name: 'divergence_watch_pauses_total',
    help: 'Divergence-watch calls paused by a 429 and asked again after the Retry-After.',
    registers: [this.registry],
  });

  /**
   * `divergences_open{type}` and `divergence_oldest_open_age_seconds`, read from the database at
   * each scrape (every process that runs workers reports the same figures).
   */
  observeDivergences(read: () => Promise<{ byType: Record<string, number>; oldestSince: Date | null }>): void {
    let latest: Promise<{ byType: Record<string, number>; oldestSince: Date | null } | null> | null = null;
    // One read per scrape for both gauges.
    const summary = () => (latest ??= readOrNull(read).finally(() => setTimeout(() => (latest = null), 1000).unref()));
    new Gauge({
      name: 'divergences_open',
      help: 'Open entries of the resellers\' divergence lists (to-do lists), by type.',
      labelNames: ['type'] as const,
      registers: [this.registry],
      async collect() {
        const read = await summary();
        this.reset();
        if (read) for (const [type, count] of Object.entries(read.byType)) this.set({ type }, count);
      },
    });
    new Gauge({
      name: 'divergence_oldest_open_age_seconds',
      help: 'Age of the oldest open divergence (0 when none is).',
      registers: [this.registry],
      async collect() {
        const read = await summary();
        if (!read) this.set(Number.NaN);
        else this.set(read.oldestSince ? Math.max(0, (Date.now() - read.oldestSince.getTime()) / 1000) : 0);
      },
    });
  }

  readonly deliveries = new Counter({
    name: 'webhook_deliveries_total',
    help: 'Outbound webhook deliveries finished, by outcome (succeeded, or failed once every scheduled attempt failed).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly deliveryAttemptDuration = new Histogram({
    name: 'webhook_delivery_attempt_duration_seconds',
    help: 'Outbound webhook delivery attempts by outcome (success, http_error, redirect, timeout, refused_address, network_error).',
    labelNames: ['outcome'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  constructor(queueDepth?: () => Promise<Record<string, number>>) {
    collectDefaultMetrics({ register: this.registry });
    if (queueDepth) {
      new Gauge({
        name: 'queue_depth',
        help: 'Messages waiting in each queue (created or retry state).',
        labelNames: ['queue'] as const,
        registers: [this.registry],
        async collect() {
          const depths = await readOrNull(queueDepth);
          this.reset();
          for (const [queue, depth] of Object.entries(depths ?? {})) this.set({ queue }, depth);
        },
      });
    }
  }

  /**
   * `reconciliation_watermark_lag_seconds{reseller_store_id}`, read from the database at each scrape
   * (every process that runs workers reports the same figures; a deleted store's series disappears).
   */
  observeReconciliationLag(read: () => Promise<{ resellerStoreId: string; lagSeconds: number }[]>): void {
    new Gauge({
      name: 'reconciliation_watermark_lag_seconds',
      help: 'Seconds since the time up to which each active reseller store was last reconciled (its creation when never).',
      labelNames: ['reseller_store_id'] as const,
      registers: [this.registry],
      async collect() {
        const lags = await readOrNull(read);
        this.reset();
        for (const { resellerStoreId, lagSeconds } of lags ?? []) this.set({ reseller_store_id: resellerStoreId }, lagSeconds);
      },
    });
  }

  /** The age of the oldest pending webhook delivery, read from the database at each scrape. */
  observeOldestPendingDelivery(oldestPendingAt: () => Promise<Date | null>): void {
    new Gauge({
      name: 'webhook_delivery_oldest_pending_age_seconds',
      help: 'Age of the oldest webhook delivery still pending (0 when none is).',
      registers: [this.registry],
      async collect() {
        const oldest = await settledWithin(oldestPendingAt, DATABASE_READ_TIMEOUT_MS);
        if (!oldest) this.set(Number.NaN);
        else this.set(oldest.value ? Math.max(0, (Date.now() - oldest.value.getTime()) / 1000) : 0);
      },
    });
  }

  observePlatformCall = (call: PlatformCallObservation): void => {
    this.platformCallDuration.observe({ platform: call.platform, method: call.method, outcome: call.outcome }, call.durationSeconds);
  };
}
