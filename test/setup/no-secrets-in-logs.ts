/**
 * Runs around every test file (vitest `setupFiles`): once the file is done and its fixtures are torn
 * down (so a service's shutdown lines are in), no log line written by any service the file started
 * may contain a secret the file sent (store tokens, webhook secrets, passwords, raw API keys).
 */
import { aroundAll, expect } from 'vitest';
import { findLeaks } from '../support/leaks.ts';

aroundAll(async (runFile) => {
  await runFile();
  const leaks = findLeaks();
  expect(leaks, `secrets in the service logs:\n${leaks.map((leak) => `${leak.source}: ${leak.line}`).join('\n')}`).toEqual([]);
});
