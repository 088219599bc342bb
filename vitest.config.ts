import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'machines/**/*.test.ts'],
    // Suites with configs of their own: `npm run test:browser`, `npm run test:chaos`.
    exclude: [...configDefaults.exclude, 'test/browser/**', 'test/chaos/**'],
    globalSetup: ['test/global-setup.ts'],
    // After every file: no log line of its services contains a secret it sent.
    setupFiles: ['test/setup/no-secrets-in-logs.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most of a test's time is spent waiting (HTTP, timers, the queue): three files at a time on two
    // cores took the suite from 617 s (two) to 482 s, each file's own time growing 14% on the whole
    // (its timing-sensitive tests keep their margins).
    maxWorkers: 3,
  },
});
