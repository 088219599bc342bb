import { iso, isoOrNull } from '../shared/time.ts';
import type { AttemptEntry } from './entity.ts';

/** A timeline entry of any kind of retried work; `resultKey` names what a successful attempt produced. */
export function presentAttempt<K extends string>(entry: AttemptEntry, resultKey: K) {
  return {
    attempt: entry.attempt,
    trigger: entry.trigger,
    startedAt: iso(entry.startedAt),
    finishedAt: isoOrNull(entry.finishedAt),
    durationMs: entry.finishedAt ? entry.finishedAt.getTime() - entry.startedAt.getTime() : null,
    outcome: entry.outcome,
    errorMessage: entry.errorMessage ?? null,
    platformStatus: entry.platformStatus ?? null,
    request: entry.request ?? null,
    response: entry.response ?? null,
    ...({ [resultKey]: entry.result ?? null } as Record<K, string | null>),
  };
}
