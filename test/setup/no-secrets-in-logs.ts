/**
 * Runs after every test file (vitest `setupFiles`): no log line written by any service the file
 * started may contain a secret the file sent (store tokens, webhook secrets, passwords, raw API keys).
 */
import { afterAll, expect } from 'vitest';
import { findLeaks } from '../support/leaks.ts';

afterAll(() => {
  const leaks = findLeaks();
  expect(leaks, `secrets in the service logs:\n${leaks.map((leak) => `${leak.source}: ${leak.line}`).join('\n')}`).toEqual([]);
});
