import { defineConfig } from 'vitest/config';

/** The browser suite (`npm run test:browser`): pages of the running service in headless Chromium. */
export default defineConfig({
  test: {
    include: ['test/browser/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup/no-secrets-in-logs.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
