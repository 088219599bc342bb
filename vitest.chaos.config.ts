import { defineConfig } from 'vitest/config';

/** The slow reliability suite (`npm run test:chaos`): crashes, outages, faults, fuzzing. */
export default defineConfig({
  test: {
    include: ['test/chaos/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
