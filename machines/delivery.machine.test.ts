import { describe, expect, it } from 'vitest';
import { applyDeliveryEvent, type DeliveryState } from './delivery.machine.ts';

const SCHEDULE = [0, 300, 600];
const fresh: DeliveryState = { status: 'pending', attempts: 0, scheduleAttempts: 0 };

describe('delivery lifecycle', () => {
  it('fails after as many attempts as the schedule has delays, each waiting the next delay', () => {
    let state = fresh;
    const waits: (number | null)[] = [];
    for (let i = 0; i < SCHEDULE.length; i++) {
      const next = applyDeliveryEvent(state, { type: 'FAIL' }, SCHEDULE)!;
      waits.push(next.nextAttemptInMs);
      state = next.state;
    }
    expect(waits).toEqual([300, 600, null]);
    expect(state).toEqual({ status: 'failed', attempts: 3, scheduleAttempts: 3 });
    expect(applyDeliveryEvent(state, { type: 'FAIL' }, SCHEDULE)).toBeNull();
  });

  it('succeeds on a 2xx and then ignores everything but nothing', () => {
    const failedOnce = applyDeliveryEvent(fresh, { type: 'FAIL' }, SCHEDULE)!.state;
    const done = applyDeliveryEvent(failedOnce, { type: 'SUCCEED' }, SCHEDULE)!;
    expect(done).toEqual({ state: { status: 'succeeded', attempts: 2, scheduleAttempts: 2 }, nextAttemptInMs: null });
    expect(applyDeliveryEvent(done.state, { type: 'RETRY' }, SCHEDULE)).toBeNull();
    expect(applyDeliveryEvent(done.state, { type: 'FAIL' }, SCHEDULE)).toBeNull();
  });

  it('a manual retry of a failed delivery starts a fresh schedule and keeps counting attempts', () => {
    const failed: DeliveryState = { status: 'failed', attempts: 3, scheduleAttempts: 3 };
    const retried = applyDeliveryEvent(failed, { type: 'RETRY' }, SCHEDULE)!;
    expect(retried).toEqual({ state: { status: 'pending', attempts: 3, scheduleAttempts: 0 }, nextAttemptInMs: 0 });
    expect(applyDeliveryEvent(retried.state, { type: 'FAIL' }, SCHEDULE)!).toEqual({ state: { status: 'pending', attempts: 4, scheduleAttempts: 1 }, nextAttemptInMs: 300 });
    expect(applyDeliveryEvent(fresh, { type: 'RETRY' }, SCHEDULE)).toBeNull();
  });

  it('abandons a pending delivery without counting an attempt', () => {
    expect(applyDeliveryEvent(fresh, { type: 'ABANDON' }, SCHEDULE)).toEqual({ state: { status: 'failed', attempts: 0, scheduleAttempts: 0 }, nextAttemptInMs: null });
  });

  it('a one-attempt schedule fails on the first failure', () => {
    expect(applyDeliveryEvent(fresh, { type: 'FAIL' }, [0])!.state.status).toBe('failed');
  });
});
