import { describe, expect, it } from 'vitest';
import {
  MAX_AUTO_RETRIES,
  applyFulfillmentEvent,
  canApplyFulfillmentEvent,
  initialFulfillment,
  type FulfillmentEvent,
  type PersistedFulfillment,
} from './fulfillment.machine.ts';

// The lifecycle is shared with sync jobs and covered state by state there; this checks the wiring.

const NOW = '2026-11-02T09:05:00.000Z';
const take: FulfillmentEvent = { type: 'TAKE', at: NOW };
const fail: FulfillmentEvent = { type: 'FAIL', error: 'reseller platform returned 502', at: NOW };
const succeed: FulfillmentEvent = { type: 'SUCCEED', resellerFulfillmentId: 'ful_9001', at: NOW };
const retry: FulfillmentEvent = { type: 'RETRY', at: NOW };

function replay(start: PersistedFulfillment, sequence: FulfillmentEvent[]): PersistedFulfillment {
  return sequence.reduce((propagation, event) => {
    const next = applyFulfillmentEvent(propagation, event);
    if (!next) throw new Error(`${event.type} refused in ${propagation.status}`);
    return { status: next.status, context: next.context };
  }, start);
}

describe('fulfillment machine', () => {
  it('starts pending without a reseller fulfillment', () => {
    expect(initialFulfillment()).toMatchObject({
      status: 'pending',
      context: { attempts: 0, retriesLeft: MAX_AUTO_RETRIES, resellerFulfillmentId: null },
    });
  });

  it('keeps the reseller fulfillment id on success and then accepts nothing more', () => {
    const done = replay(initialFulfillment(), [take, fail, take, succeed]);

    expect(done).toMatchObject({
      status: 'completed',
      context: { attempts: 2, resellerFulfillmentId: 'ful_9001', completedAt: NOW, errorMessage: null },
    });
    for (const event of [take, succeed, fail, retry]) {
      expect(canApplyFulfillmentEvent(done, event)).toBe(false);
    }
  });

  it('follows the shared retry policy: dead after 4 attempts, manual retry from dead', () => {
    const alwaysFails = Array.from({ length: MAX_AUTO_RETRIES + 1 }, () => [take, fail]).flat();
    const dead = replay(initialFulfillment(), alwaysFails);

    expect(dead).toMatchObject({ status: 'dead', context: { attempts: 4, deadAt: NOW } });
    expect(replay(dead, [retry])).toMatchObject({
      status: 'pending',
      context: { attempts: 4, retriesLeft: MAX_AUTO_RETRIES, errorMessage: null, deadAt: null },
    });
  });

  it('skips tracking that must not be sent: terminal, never retried, the reason kept', () => {
    const skipped = replay(initialFulfillment(), [{ type: 'SKIP', reason: 'platform_b needs a tracking number', at: NOW }]);

    expect(skipped).toMatchObject({ status: 'skipped', context: { attempts: 0, errorMessage: 'platform_b needs a tracking number' } });
    for (const event of [take, succeed, fail, retry, { type: 'LOSE', at: NOW } as const, { type: 'ABANDON', error: 'x', at: NOW } as const]) {
      expect(canApplyFulfillmentEvent(skipped, event)).toBe(false);
    }
  });
});
