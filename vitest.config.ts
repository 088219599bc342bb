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
    // Most of a test's time is spent waiting (HTTP, timers, the queue), so two files at a time halve the
    // suite on two cores without making its timing-sensitive tests tight.
    maxWorkers: 2,
  },
});
