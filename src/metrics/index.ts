import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PlatformCallObservation } from '../platforms/http.ts';

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

  constructor(queueDepth?: () => Promise<Record<string, number>>) {
    collectDefaultMetrics({ register: this.registry });
    if (queueDepth) {
      new Gauge({
        name: 'queue_depth',
        help: 'Messages waiting in each queue (created or retry state).',
        labelNames: ['queue'] as const,
        registers: [this.registry],
        async collect() {
          for (const [queue, depth] of Object.entries(await queueDepth())) this.set({ queue }, depth);
        },
      });
    }
  }

  observePlatformCall = (call: PlatformCallObservation): void => {
    this.platformCallDuration.observe({ platform: call.platform, method: call.method, outcome: call.outcome }, call.durationSeconds);
  };
}
