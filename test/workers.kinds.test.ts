/**
 * The one list of kinds (src/workers/kinds.ts) as the workers and the sweep are handed it: each kind
 * gets the steps other features write with its transitions (the to-do list's dead entries) and what
 * they add to its events, and a list that names a kind twice, or steps or reads for a kind it does
 * not list, fails the start-up.
 */
import { describe, expect, it } from 'vitest';
import { syncJobKind } from '../src/sync-jobs/kind.ts';
import { ATTEMPT_KINDS, EVENT_READS, registerKinds, SETTLED_STEPS, type KindInfrastructure } from '../src/workers/kinds.ts';

// Registering builds each kind's attempt, which only keeps what it is handed: no call is made.
const ctx = { orm: {} } as unknown as KindInfrastructure;

describe('registering the kinds of retried work', () => {
  it("hands each kind its settled steps: the to-do list's job_dead and fulfillment_dead", () => {
    const registered = registerKinds(ctx);
    expect(registered.map(({ kind }) => kind.name)).toEqual(ATTEMPT_KINDS.map((kind) => kind.name));
    for (const { kind } of registered) {
      expect(kind.onSettled, kind.name).toBe(SETTLED_STEPS[kind.name]);
      expect(kind.onSettled!.length, kind.name).toBeGreaterThan(0);
    }
  });

  it('fails on settled steps for a kind the list does not name', () => {
    expect(() => registerKinds(ctx, [syncJobKind])).toThrow(/settled steps for fulfillment, which is not listed/);
    expect(() => registerKinds(ctx, [syncJobKind], { sync_job: SETTLED_STEPS.sync_job! })).not.toThrow();
  });

  it("hands the sync job kind its event read (a job's cancellations) and fails on reads for a kind not listed", () => {
    const byName = new Map(registerKinds(ctx).map(({ kind }) => [kind.name, kind]));
    expect(byName.get('sync_job')!.eventReads).toBe(EVENT_READS.sync_job);
    expect(byName.get('sync_job')!.eventReads).toHaveLength(1);
    expect(byName.get('fulfillment')!.eventReads).toEqual([]);
    expect(() => registerKinds(ctx, [syncJobKind], { sync_job: SETTLED_STEPS.sync_job! }, { fulfillment: [] })).toThrow(/event reads for fulfillment, which is not listed/);
  });

  it('fails on a kind listed twice', () => {
    expect(() => registerKinds(ctx, [syncJobKind, syncJobKind], {})).toThrow(/name sync_job is listed twice/);
  });
});
