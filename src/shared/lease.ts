import type { Logger } from 'pino';

/** Thrown by `Lease.check` once another process took the work over (its lease was lost). */
export class LeaseLost extends Error {}

export interface Lease {
  lost: boolean;
  /** Throws LeaseLost once the lease was lost: the work must stop. */
  check(): void;
  release(): void;
}

/**
 * Renews a lease on long-running work in the background, every third of `leaseMs`, until released;
 * a renewal that finds the work no longer this process's marks the lease lost.
 */
export function holdLease(renew: () => Promise<boolean>, leaseMs: number, logger: Logger): Lease {
  const lease: Lease = {
    lost: false,
    check() {
      if (lease.lost) throw new LeaseLost();
    },
    release: () => clearInterval(timer),
  };
  const timer = setInterval(() => {
    renew().then(
      (held) => (lease.lost ||= !held),
      (error: unknown) => logger.warn({ err: error }, 'could not renew a lease'),
    );
  }, leaseMs / 3);
  timer.unref();
  return lease;
}
